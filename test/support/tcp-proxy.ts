// A TCP proxy in front of a real service (PostgreSQL, the hub), so a test can cut the network between a
// client and it — every open connection reset, new ones refused — without stopping the shared service.
import { createServer, connect, type Server, type Socket } from "node:net";

export class TcpProxy {
  private server: Server | undefined;
  private readonly open = new Set<Socket>();
  private refusing = false;
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
        from.pipe(to);
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

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
