// A TCP proxy in front of a real service (PostgreSQL, the hub), so a test can cut the network between a
// client and it — every open connection reset, new ones refused — without stopping the shared service.
import { createServer, connect, type Server, type Socket } from "node:net";

export class TcpProxy {
  private server: Server | undefined;
  private readonly open = new Set<Socket>();
  private refusing = false;
  /** While set, what clients send is kept here instead of reaching the service (answers still flow back). */
  private held: { to: Socket; chunk: Buffer }[] | undefined;
  port = 0;

  constructor(
    private readonly targetPort: number,
    private readonly targetHost = "127.0.0.1",
  ) {}

  async start(port = 0): Promise<this> {
    this.server = createServer((client) => {
      if (this.refusing) return void client.destroy();
      const upstream = connect(this.targetPort, this.targetHost);
      for (const [from, to] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        this.open.add(from);
        from.on("error", () => to.destroy());
        from.on("close", () => {
          this.open.delete(from);
          to.destroy();
        });
        if (from === client) {
          client.on("data", (chunk: Buffer) => (this.held ? this.held.push({ to, chunk }) : to.write(chunk)));
        } else from.pipe(to);
      }
    });
    await new Promise<void>((resolve) => this.server!.listen(port, "127.0.0.1", resolve));
    this.port = (this.server!.address() as { port: number }).port;
    return this;
  }

  /** Resets every open connection and refuses new ones until `restore()`. */
  cut(): void {
    this.refusing = true;
    for (const socket of this.open) socket.resetAndDestroy();
  }

  restore(): void {
    this.refusing = false;
  }

  /** Cuts for `ms`, then lets connections through again. */
  async cutFor(ms: number): Promise<void> {
    this.cut();
    await new Promise((resolve) => setTimeout(resolve, ms));
    this.restore();
  }

  /** Keeps what clients send from the service (the connections stay open) until `release()`. */
  hold(): void {
    this.held ??= [];
  }

  /** What clients sent while held, as text. */
  heldText(): string {
    return (this.held ?? []).map(({ chunk }) => chunk.toString("latin1")).join("");
  }

  /** Sends what was held, in order, and lets everything through again. */
  release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const { to, chunk } of held) if (!to.destroyed) to.write(chunk);
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
