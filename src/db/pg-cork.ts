// node-postgres writes each protocol message of a statement (Bind, Describe, Execute, Sync) to the socket on
// its own: four writes, and PostgreSQL may wake for the first and read the rest later. Corked for the rest of
// the tick, a statement (and every other one sent in the same tick on that connection) leaves in one write.
// Order is kept: every write of the connection goes through the same corked socket.
import pg from "pg";

interface Writable {
  writable: boolean;
  cork(): void;
  uncork(): void;
}

type Connection = { stream: Writable; _send(buffer: Buffer): boolean };

const corked = new WeakSet<Writable>();
let installed = false;

export function corkPgWrites(): void {
  if (installed) return;
  installed = true;
  const proto = (pg as unknown as { Connection: { prototype: Connection } }).Connection.prototype;
  const send = proto._send;
  proto._send = function corkedSend(this: Connection, buffer: Buffer): boolean {
    const stream = this.stream;
    if (stream.writable && !corked.has(stream)) {
      corked.add(stream);
      stream.cork();
      process.nextTick(() => {
        corked.delete(stream);
        stream.uncork();
      });
    }
    return send.call(this, buffer);
  };
}
