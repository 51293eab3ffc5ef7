// An operator's endpoint for outgoing events, written from docs/events.md: it checks each post's signature
// and timestamp (refusing a bad one with 401, as a real receiver would), keeps what it got, and can be
// taken down (connections refused) and brought back on the same port, or made slow.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { verifyEventSignature } from "../../src/events/event-signature.js";

export interface ReceivedEvent {
  id: string;
  type: string;
  occurredAt: string;
  conversationId: string | null;
  channel: string | null;
  seq: number;
  data: Record<string, any>;
}

export interface ReceivedPost {
  headers: IncomingMessage["headers"];
  /** Whether the signature and timestamp checked out. */
  valid: boolean;
  event: ReceivedEvent;
}

export class EventReceiver {
  /** Every post, in the order they arrived (repeats included). */
  readonly posts: ReceivedPost[] = [];
  /** How long each answer waits. */
  delayMs = 0;
  /** The status answered (valid posts); 200 by default. */
  status = 200;
  private server: Server | undefined;
  port = 0;

  constructor(readonly secret: string) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/hub-events`;
  }

  /** Events taken (answered 2xx with a valid signature), once per id, in order of arrival. */
  events(): ReceivedEvent[] {
    const seen = new Set<string>();
    const out: ReceivedEvent[] = [];
    for (const post of this.posts)
      if (post.valid && !seen.has(post.event.id)) {
        seen.add(post.event.id);
        out.push(post.event);
      }
    return out;
  }

  of(conversationId: string): ReceivedEvent[] {
    return this.events().filter((event) => event.conversationId === conversationId);
  }

  async start(port = this.port): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        const timestamp = String(req.headers["x-hub-timestamp"] ?? "");
        const signature = String(req.headers["x-hub-signature-256"] ?? "");
        const fresh = Math.abs(Date.now() / 1000 - Number(timestamp)) <= 300;
        const valid = fresh && verifyEventSignature(this.secret, timestamp, raw, signature);
        const event = JSON.parse(raw) as ReceivedEvent;
        const answer = () => {
          if (!valid) return void res.writeHead(401).end("bad signature");
          // The post counts once it is answered 2xx.
          if (this.status >= 200 && this.status < 300) this.posts.push({ headers: req.headers, valid, event });
          else this.posts.push({ headers: req.headers, valid: false, event });
          res.writeHead(this.status, { "Content-Type": "application/json" }).end("{}");
        };
        if (this.delayMs > 0) setTimeout(answer, this.delayMs);
        else answer();
      });
    });
    this.server.listen(port, "127.0.0.1");
    await once(this.server, "listening");
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** Stops listening: the hub's posts are refused until start() again. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
