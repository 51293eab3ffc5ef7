// The socket.io adapter as the hub wraps it (src/realtime-adapter.ts): an emit with ack (every message to a
// widget) stays in the process while it is the only one — nothing is published to Redis — and reaches another
// process's sockets as soon as there is another process.
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { io as connect, type Socket as ClientSocket } from "socket.io-client";
import { afterAll, describe, expect, it } from "vitest";
import type { WidgetMessage } from "../src/channels/widget/events.js";
import { createRealtime, type Realtime } from "../src/realtime.js";
import { eventually, queuePrefix, REDIS_URL } from "./support/services.js";
import { TcpProxy } from "./support/tcp-proxy.js";

const ROOM = "conversation:adapter-test";

const message = (text: string): WidgetMessage => ({
  id: text,
  role: "agent",
  text,
  createdAt: new Date().toISOString(),
});

async function startProcess(
  prefix: string,
  redisUrl = REDIS_URL,
): Promise<{ realtime: Realtime; http: HttpServer; url: string }> {
  const realtime = createRealtime({ kind: "server", url: redisUrl }, prefix);
  const http = createServer();
  realtime.attach(http);
  // The test's sockets join the room the way the widget namespace puts a conversation's sockets in theirs.
  realtime.widget.on("connection", (socket) => void socket.join(ROOM));
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  return { realtime, http, url: `http://127.0.0.1:${(http.address() as AddressInfo).port}` };
}

async function widgetOf(url: string, label: string, got: string[]): Promise<ClientSocket> {
  const socket = connect(`${url}/widget`, { transports: ["websocket"] });
  socket.on("message", (received: WidgetMessage, ack?: (answer: unknown) => void) => {
    got.push(`${label}:${received.text}`);
    ack?.({ ok: true });
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("connect_error", reject);
  });
  return socket;
}

describe("the hub's socket.io adapter", () => {
  const prefix = queuePrefix();
  const redis = new Redis(REDIS_URL);
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    await redis.quit();
  });
  /** A process with a widget connected to it (the widget gets `label:text` into `got`); both stopped after. */
  async function processWithWidget(of: string, label: string, got: string[], redisUrl?: string) {
    const process = await startProcess(of, redisUrl);
    stops.push(() =>
      process.realtime.close().then(() => new Promise((resolve) => process.http.close(() => resolve()))),
    );
    const widget = await widgetOf(process.url, label, got);
    stops.push(async () => void widget.close());
    return process;
  }
  /** The adapter's channel of the widget namespace, for processes on prefix `of`. */
  const adapterChannel = (of: string) => `${of}:socket.io#/widget#`;
  /** Waits until `n` processes of `of` are subscribed to the adapter's channel. */
  const subscribed = (of: string, n: number, what: string) =>
    eventually(async () => Number((await redis.pubsub("NUMSUB", adapterChannel(of)))[1]) === n, what);

  it("keeps an emit with ack in a lone process (no PUBLISH), and reaches a second process's sockets", async () => {
    const channel = adapterChannel(prefix);
    const monitor = await redis.duplicate().monitor();
    const published: string[] = [];
    monitor.on("monitor", (_time: string, args: string[]) => {
      if (String(args[0]).toLowerCase() === "publish" && args[1] === channel) published.push(args[1]);
    });
    stops.push(async () => void monitor.disconnect());

    const got: string[] = [];
    const a = await processWithWidget(prefix, "a", got);
    await subscribed(prefix, 1, "the first process subscribed to the adapter's channel");
    const alone = await a.realtime.widget.to(ROOM).timeout(5000).emitWithAck("message", message("one"));
    expect(alone).toHaveLength(1);
    expect(got).toEqual(["a:one"]);

    await processWithWidget(prefix, "b", got);
    // The second process counts once its subscription is in (it subscribes as it starts).
    await subscribed(prefix, 2, "both processes subscribed to the adapter's channel");

    const both = await a.realtime.widget.to(ROOM).timeout(5000).emitWithAck("message", message("two"));
    expect(both).toHaveLength(2);
    expect(got.sort()).toEqual(["a:one", "a:two", "b:two"]);
    await eventually(() => published.length === 1, "the second message published once, for the other process");
    await new Promise((resolve) => setTimeout(resolve, 100)); // and nothing more
    expect(published).toHaveLength(1);
  });

  it("never keeps a local socket waiting for Redis: a Redis that stops answering, or is gone", async () => {
    const redisUrl = new URL(REDIS_URL);
    const proxy = await new TcpProxy(Number(redisUrl.port || 6379), redisUrl.hostname).start();
    stops.push(() => proxy.stop()); // after the process has stopped
    const other = queuePrefix();
    const got: string[] = [];
    const a = await processWithWidget(other, "a", got, `redis://${redisUrl.hostname}:${proxy.port}`);
    await subscribed(other, 1, "the process subscribed to the adapter's channel");

    // The emit's own completion waits for the count (socket.io's, as before): until its timeout, which hands
    // over the acks that came. What must not wait is the socket here: it has the message while Redis is still
    // away (without the fallback it would have it only once Redis answered again).
    const emit = (text: string) =>
      a.realtime.widget
        .to(ROOM)
        .timeout(3000)
        .emitWithAck("message", message(text))
        .catch((error: { responses?: unknown[] }) => error.responses ?? []);
    proxy.hold(); // connected, but nothing it sends reaches Redis: the count never comes
    const held = emit("held");
    await eventually(() => got.includes("a:held"), "the message at the local socket while Redis is held");
    proxy.release();
    expect(await held).toHaveLength(1);
    proxy.cut(); // gone: the client knows it is not connected
    const cut = emit("cut");
    await eventually(() => got.includes("a:cut"), "the message at the local socket while Redis is cut");
    proxy.restore();
    expect(await cut).toHaveLength(1);
    expect(got).toEqual(["a:held", "a:cut"]);
    // Back: the process is subscribed again (by ioredis itself), so other processes reach its sockets.
    await subscribed(other, 1, "the process subscribed again once Redis is back");
  });
});
