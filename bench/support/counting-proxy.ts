// A TCP proxy in front of PostgreSQL or Redis that reads what the client sends and counts it exactly —
// every frontend message of the PostgreSQL protocol, every RESP command — with the bytes each way. The
// counts are kept per connection, so a reset takes effect between two chunks, and connections that are
// not the client's (a sentinel's, a replica's) can be told apart from the hub's.
import { createHash } from "node:crypto";
import { connect, createServer, type Server, type Socket } from "node:net";

export type Wire = "postgres" | "redis";

/** Whose connection it is: the hub's, or (Redis behind Sentinel) a sentinel's or a replica's. */
export type Peer = "client" | "sentinel" | "replication";

export interface Counts {
  connections: number;
  /** PostgreSQL: frontend messages by type letter (Q, P, B, D, E, S, …). Redis: commands by name. */
  messages: Record<string, number>;
  /** PostgreSQL: E + Q. Redis: top-level RESP arrays (commands). */
  statements: number;
  /** PostgreSQL: S + Q. Redis: TCP chunks from the client in which at least one command ends. */
  roundTrips: number;
  /** PostgreSQL: BEGIN / START TRANSACTION run (in a Q or an executed P). Redis: MULTI. */
  transactions: number;
  /** What each statement or command was: a statement's first words, a command with its script's name. */
  byLabel: Record<string, number>;
  bytesSent: number;
  bytesReceived: number;
}

export function emptyCounts(): Counts {
  return {
    connections: 0,
    messages: {},
    statements: 0,
    roundTrips: 0,
    transactions: 0,
    byLabel: {},
    bytesSent: 0,
    bytesReceived: 0,
  };
}

export function addCounts(into: Counts, from: Counts, factor = 1): Counts {
  into.connections += from.connections * factor;
  into.statements += from.statements * factor;
  into.roundTrips += from.roundTrips * factor;
  into.transactions += from.transactions * factor;
  into.bytesSent += from.bytesSent * factor;
  into.bytesReceived += from.bytesReceived * factor;
  for (const [key, n] of Object.entries(from.messages)) into.messages[key] = (into.messages[key] ?? 0) + n * factor;
  for (const [key, n] of Object.entries(from.byLabel)) into.byLabel[key] = (into.byLabel[key] ?? 0) + n * factor;
  return into;
}

const bump = (record: Record<string, number>, key: string) => (record[key] = (record[key] ?? 0) + 1);

/** Names for Lua scripts by their SHA-1, so EVAL and EVALSHA can say which script they ran. */
export type ScriptNames = Map<string, string>;

export const sha1 = (text: string | Buffer) => createHash("sha1").update(text).digest("hex");

interface Connection {
  peer: Peer;
  counts: Counts;
  closed: boolean;
  /** Bytes of an unfinished message, kept for the next chunk. */
  pending: Buffer;
  /** PostgreSQL: the startup message (no type byte) is still to come. */
  startup: boolean;
  /** PostgreSQL: prepared statements and bound portals of this connection, by name → statement text. */
  statements: Map<string, string>;
  portals: Map<string, string>;
}

export class CountingProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private connections: Connection[] = [];
  port = 0;

  constructor(
    readonly wire: Wire,
    private readonly target: { host: string; port: number },
    private readonly scripts: ScriptNames = new Map(),
  ) {}

  async start(port = 0): Promise<this> {
    this.server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      client.setNoDelay(true);
      upstream.setNoDelay(true);
      const connection: Connection = {
        peer: "client",
        counts: { ...emptyCounts(), connections: 1 },
        closed: false,
        pending: Buffer.alloc(0),
        startup: true,
        statements: new Map(),
        portals: new Map(),
      };
      this.connections.push(connection);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("close", () => this.sockets.delete(socket));
      }
      client.on("data", (chunk: Buffer) => {
        connection.counts.bytesSent += chunk.length;
        this.read(connection, chunk);
        upstream.write(chunk);
      });
      upstream.on("data", (chunk: Buffer) => {
        connection.counts.bytesReceived += chunk.length;
        client.write(chunk);
      });
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
      client.on("close", () => {
        connection.closed = true;
        upstream.end();
      });
      upstream.on("close", () => client.end());
    });
    await new Promise<void>((resolve) => this.server!.listen(port, "127.0.0.1", resolve));
    this.port = (this.server!.address() as { port: number }).port;
    return this;
  }

  /** Starts every count again from zero (the connections stay open, and keep what they know). */
  reset(): void {
    this.connections = this.connections.filter((c) => !c.closed);
    for (const connection of this.connections) connection.counts = emptyCounts();
  }

  /** What was counted since the last reset, summed over connections, by whose connection it was. */
  counts(): Partial<Record<Peer, Counts>> {
    const out: Partial<Record<Peer, Counts>> = {};
    for (const { peer, counts } of this.connections) addCounts((out[peer] ??= emptyCounts()), counts);
    return out;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private read(connection: Connection, chunk: Buffer): void {
    const data = connection.pending.length ? Buffer.concat([connection.pending, chunk]) : chunk;
    try {
      const used =
        this.wire === "postgres" ? readPostgres(connection, data) : readRedis(connection, data, this.scripts);
      connection.pending = used < data.length ? Buffer.from(data.subarray(used)) : Buffer.alloc(0);
    } catch {
      // Not the protocol expected: said in the counts, never guessed at.
      bump(connection.counts.messages, "(unparsed chunk)");
      connection.pending = Buffer.alloc(0);
    }
  }
}

// --- PostgreSQL: frontend messages (https://www.postgresql.org/docs/current/protocol-message-formats.html) ---

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/** Reads whole messages from `data`; returns how many bytes it used. */
function readPostgres(connection: Connection, data: Buffer): number {
  let at = 0;
  const counts = connection.counts;
  for (;;) {
    if (connection.startup) {
      // Startup, SSLRequest, GSSENCRequest and CancelRequest: an int32 length (with itself), then an int32 code.
      if (data.length - at < 8) return at;
      const length = data.readInt32BE(at);
      if (data.length - at < length) return at;
      const code = data.readInt32BE(at + 4);
      bump(counts.messages, code === SSL_REQUEST || code === GSSENC_REQUEST ? "(ssl request)" : "(startup)");
      if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) connection.startup = false;
      at += length;
      continue;
    }
    if (data.length - at < 5) return at;
    const type = String.fromCharCode(data[at]!);
    const length = data.readInt32BE(at + 1);
    if (data.length - at < 1 + length) return at;
    const body = data.subarray(at + 5, at + 1 + length);
    at += 1 + length;
    bump(counts.messages, type);
    if (type === "Q") {
      const text = cString(body, 0).text;
      counts.statements += 1;
      counts.roundTrips += 1;
      countStatement(counts, text);
    } else if (type === "P") {
      const name = cString(body, 0);
      connection.statements.set(name.text, cString(body, name.next).text);
    } else if (type === "B") {
      const portal = cString(body, 0);
      const statement = cString(body, portal.next).text;
      connection.portals.set(portal.text, connection.statements.get(statement) ?? `(statement ${statement})`);
    } else if (type === "E") {
      counts.statements += 1;
      countStatement(counts, connection.portals.get(cString(body, 0).text) ?? "(unknown portal)");
    } else if (type === "S") {
      counts.roundTrips += 1;
    } else if (type === "C" && body[0] === "S".charCodeAt(0)) {
      connection.statements.delete(cString(body, 1).text);
    }
  }
}

function cString(body: Buffer, from: number): { text: string; next: number } {
  const end = body.indexOf(0, from);
  const stop = end === -1 ? body.length : end;
  return { text: body.toString("utf8", from, stop), next: stop + 1 };
}

function countStatement(counts: Counts, text: string): void {
  const label = statementLabel(text);
  if (/^(BEGIN|START TRANSACTION)\b/i.test(label)) counts.transactions += 1;
  bump(counts.byLabel, label);
}

/** A statement's first words: enough to tell the hub's statements apart, the values left out. */
export function statementLabel(text: string): string {
  const flat = text
    .replace(/--[^\n]*/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return flat.length > 90 ? `${flat.slice(0, 90)}…` : flat;
}

// --- Redis: RESP commands (arrays of bulk strings; inline commands too) ---

/** Reads whole commands from `data`; returns how many bytes it used. */
function readRedis(connection: Connection, data: Buffer, scripts: ScriptNames): number {
  let at = 0;
  let ended = 0;
  for (;;) {
    const command = data[at] === 0x2a /* '*' */ ? readArray(data, at) : readInline(data, at);
    if (!command) break;
    at = command.next;
    ended += 1;
    countCommand(connection, command.args, scripts);
  }
  if (ended > 0) connection.counts.roundTrips += 1;
  return at;
}

function readLine(data: Buffer, from: number): { line: string; next: number } | undefined {
  const end = data.indexOf("\r\n", from);
  if (end === -1) return undefined;
  return { line: data.toString("latin1", from, end), next: end + 2 };
}

function readArray(data: Buffer, from: number): { args: Buffer[]; next: number } | undefined {
  const header = readLine(data, from + 1);
  if (!header) return undefined;
  const n = Number(header.line);
  const args: Buffer[] = [];
  let at = header.next;
  for (let i = 0; i < n; i++) {
    if (at >= data.length) return undefined;
    if (data[at] !== 0x24 /* '$' */) throw new Error(`RESP: expected a bulk string at byte ${at}`);
    const size = readLine(data, at + 1);
    if (!size) return undefined;
    const length = Number(size.line);
    if (data.length < size.next + length + 2) return undefined;
    args.push(data.subarray(size.next, size.next + length));
    at = size.next + length + 2;
  }
  return { args, next: at };
}

function readInline(data: Buffer, from: number): { args: Buffer[]; next: number } | undefined {
  if (from >= data.length) return undefined;
  const line = readLine(data, from);
  if (!line) return undefined;
  return {
    args: line.line
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map((word) => Buffer.from(word, "latin1")),
    next: line.next,
  };
}

function countCommand(connection: Connection, args: Buffer[], scripts: ScriptNames): void {
  const counts = connection.counts;
  const name = (args[0]?.toString("latin1") ?? "").toUpperCase();
  if (!name) return;
  const second = (args[1]?.toString("latin1") ?? "").toUpperCase();
  // A sentinel names its connections; a replica speaks the replication protocol.
  if (name === "CLIENT" && second === "SETNAME" && args[2]?.toString("latin1").startsWith("sentinel-")) {
    connection.peer = "sentinel";
  }
  if (name === "REPLCONF" || name === "PSYNC" || name === "SYNC") connection.peer = "replication";
  counts.statements += 1;
  if (name === "MULTI") counts.transactions += 1;
  bump(counts.messages, name);
  let label = name;
  if (name === "EVAL" || name === "EVALSHA" || name === "EVAL_RO" || name === "EVALSHA_RO") {
    const sha = name.startsWith("EVALSHA") ? (args[1]?.toString("latin1") ?? "") : sha1(args[1] ?? "");
    label = `${name} ${scripts.get(sha) ?? sha.slice(0, 10)}`;
  } else if (["CLIENT", "SCRIPT", "XINFO", "CONFIG", "PUBSUB"].includes(name)) {
    label = `${name} ${second}`;
  }
  bump(counts.byLabel, label);
}
