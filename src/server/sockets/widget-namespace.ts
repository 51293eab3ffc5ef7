// The `/widget` socket.io namespace: token auth, history after lastMessageId (with the running jobs) and its
// confirmation, the person's messages (idempotent on clientId), read receipts; and the changes a widget shows
// as they happen (jobs starting and ending, progress, typing).
// Thin: each handler calls one function.
// Every handler takes whatever a client sends — any payload, an ack that is not a function, no ack — and
// never throws: a visitor's socket is untrusted input, and one bad event must not reach the process.
import { MAX_BUTTON_PAYLOAD } from "../../conversations/attachments.js";
import { z } from "zod";
import { roomOf, type SendAnswer, type WidgetJob } from "../../channels/widget/events.js";
import { widgetMessage, widgetRunningJob } from "../../channels/widget/widget-channel.js";
import { checkWidgetToken } from "../../channels/widget/widget-token.js";
import { conversationOfToken, startWidgetConversation } from "../../conversations/widget-sessions.js";
import { isErased } from "../../conversations/erased.js";
import type { HubContext } from "../../context.js";
import { MAX_ATTACHMENTS } from "../../conversations/attachments.js";
import { receiveUserMessage } from "../../conversations/inbound.js";
import { attachUploads, filesText } from "../../conversations/widget-uploads.js";
import { runningJobs, widgetHistory } from "../../conversations/widget-history.js";
import { errorKey } from "../../log-throttle.js";
import type { WidgetNamespace } from "../../realtime.js";
import { clientAddressOf } from "../client-address.js";

/** Text PostgreSQL can store: no NUL, no lone UTF-16 surrogate. */
const storable = (value: string) => !value.includes("\u0000") && value.isWellFormed();
const STORABLE = "contains a NUL character or a lone surrogate";
const sendSchema = z
  .object({
    // May be empty when the message is files alone.
    text: z.string().trim().max(4000).refine(storable, STORABLE).default(""),
    clientId: z.string().min(1).max(100).refine(storable, STORABLE),
    attachments: z
      .array(z.object({ uploadId: z.uuid() }))
      .max(MAX_ATTACHMENTS)
      .default([]),
    // A tapped button's payload: it reaches the agent's turn with the message, if that button was offered.
    payload: z.string().min(1).max(MAX_BUTTON_PAYLOAD).refine(storable, STORABLE).optional(),
  })
  .refine((send) => send.text !== "" || send.attachments.length > 0, {
    path: ["text"],
    message: "is empty and no file is attached",
  });
const upToSchema = z.object({ upTo: z.uuid() });
/**
 * A socket's events are handled one at a time, in the order sent (a person's messages keep their order,
 * and one visitor holds at most one database connection); this many may wait, more are refused at once.
 */
const MAX_QUEUED = 50;

type WidgetSocket = Parameters<Parameters<WidgetNamespace["on"]>[1]>[0];
type Reply = (answer: unknown) => void;

/** The client's ack if it sent a function; otherwise nothing. An ack that throws is the client's problem. */
function replyOf(ack: unknown): Reply {
  if (typeof ack !== "function") return () => {};
  return (answer) => {
    try {
      (ack as Reply)(answer);
    } catch {
      // socket.io's own ack functions do not throw; anything else is not ours to crash on
    }
  };
}

function invalid(error: z.ZodError): SendAnswer {
  const fields = error.issues.map((issue) => issue.path.join(".") || "(payload)").join(", ");
  return { error: { code: "invalid_request", message: `invalid ${fields}` } };
}

const rateLimited = (retryAfterMs: number) => ({
  error: { code: "rate_limited", message: "too many events; try again later", retryAfterMs },
});

export function attachWidgetNamespace(ctx: HubContext): void {
  const widget = ctx.realtime.widget;
  const addressOf = clientAddressOf(ctx.config.trustProxy);
  widget.use((socket, next) => {
    const auth = (socket.handshake.auth ?? {}) as { token?: unknown };
    const check = checkWidgetToken(ctx.config.secrets.callbackSecret, auth.token);
    // An expired token is the hub's own: the client renews it with the session it keeps (widget-sessions.ts).
    if (check && "expired" in check) return next(refusal("token_expired"));
    if (!check) return next(new Error("unauthorized"));
    void (async () => {
      const verdict = await ctx.limits.connection(addressOf(socket.request));
      if (!verdict.ok) return next(refusal("rate_limited", verdict.retryAfterMs));
      const { id: conversationId, unstarted } = await conversationOfToken(
        ctx.sql,
        ctx.config.secrets.callbackSecret,
        check,
      );
      // A token of an erased conversation opens nothing: the client starts a new session.
      if (await isErased(ctx.sql, conversationId)) return next(refusal("erased"));
      const release = ctx.limits.openSocket(conversationId);
      if (!release) return next(refusal("too_many_connections"));
      // A socket whose connection closes before it is connected never emits "disconnect": its slot goes
      // back when the connection closes, at whatever point of the handshake that happens.
      const connection = socket.conn;
      const releaseOnce = () => {
        connection.off("close", releaseOnce);
        ctx.limits.socketClosed(socket.id);
        release();
      };
      if (connection.readyState !== "open") {
        releaseOnce();
        return next(refusal("gone"));
      }
      connection.once("close", releaseOnce);
      socket.once("disconnect", releaseOnce);
      socket.data.conversationId = conversationId;
      socket.data.unstarted = unstarted;
      next();
    })().catch((error: unknown) => {
      ctx.warnRepeated(`widget-connect:${errorKey(error)}`, { err: error }, "widget connection refused");
      next(refusal("unavailable"));
    });
  });

  widget.on("connection", (socket) => {
    // Changes at most once: when the person's first message finds their conversation made under another id.
    let { conversationId } = socket.data;
    /** Makes the conversation on the person's first message; until then it is not in the database. */
    const started = async () => {
      if (!socket.data.unstarted) return;
      const id = await startWidgetConversation(ctx.sql, { id: conversationId, unstarted: socket.data.unstarted });
      socket.data.unstarted = undefined;
      if (id === conversationId) return;
      // Another tab or app of the person made it first, under the id its own session was given (the derived id
      // is the same for both, unless an erased conversation holds it: then each session had a random one).
      await socket.leave(roomOf(conversationId));
      await socket.join(roomOf(id));
      conversationId = socket.data.conversationId = id;
    };
    let queued = 0;
    let tail: Promise<void> = Promise.resolve();
    /** Queues one event's work behind the socket's earlier events; never rejects. */
    const handle = (ack: unknown, work: (reply: Reply) => Promise<void>) => {
      const reply = replyOf(ack);
      if (queued >= MAX_QUEUED) return reply(rateLimited(1000));
      queued += 1;
      tail = tail
        .then(() => work(reply))
        .catch((error: unknown) => {
          ctx.warnRepeated(
            `widget-event:${errorKey(error)}`,
            { err: error, conversation_id: conversationId },
            "widget event failed",
          );
          reply({ error: { code: "unavailable", message: "try again" } });
        })
        .finally(() => (queued -= 1));
    };

    const address = addressOf(socket.request);
    // Every event counts against the socket's limit, whatever its name (one the hub does not know included);
    // past it, an event is answered with `rate_limited` and goes no further.
    socket.use((packet, next) => {
      void ctx.limits.socketEvent(socket.id).then((verdict) => {
        if (verdict.ok) return next();
        replyOf(packet[packet.length - 1])(rateLimited(verdict.retryAfterMs));
      });
    });

    // Handlers first: a client may send the moment it is connected, before its history is out.
    socket.on("send", (payload: unknown, ack: unknown) =>
      handle(ack, async (reply) => {
        const parsed = sendSchema.safeParse(payload);
        if (!parsed.success) return reply(invalid(parsed.error));
        const verdict = await ctx.limits.message(conversationId, address);
        if (!verdict.ok) return reply(rateLimited(verdict.retryAfterMs));
        if (await isErased(ctx.sql, conversationId)) return reply(erased);
        await started();
        const { text, clientId, payload: tapped } = parsed.data;
        const ids = parsed.data.attachments.map((attachment) => attachment.uploadId);
        const { attachments, unknown } = await attachUploads(ctx.sql, conversationId, ids, ctx.now());
        if (unknown.length > 0)
          return reply({
            error: {
              code: "invalid_request",
              message: `invalid ${unknown.map((index) => `attachments.${index}.uploadId`).join(", ")}: no such upload in this conversation`,
            },
          });
        const outcome = await receiveUserMessage(ctx, {
          conversationId,
          text: text || filesText(attachments),
          clientId,
          attachments,
          payload: tapped,
          unoffered: "refuse",
        });
        if ("refused" in outcome) return reply(notOffered);
        const { message, created } = outcome;
        reply({ id: message.id });
        // The person's other tabs and devices see it too.
        if (created) socket.to(roomOf(conversationId)).emit("message", widgetMessage(message), () => {});
      }),
    );

    socket.on("read", (payload: unknown, ack: unknown) =>
      handle(ack, async (reply) => {
        const parsed = upToSchema.safeParse(payload);
        if (!parsed.success) return reply({ ok: false });
        const verdict = await ctx.limits.receipt(conversationId);
        if (!verdict.ok) return reply({ ok: false, ...rateLimited(verdict.retryAfterMs) });
        reply({ ok: await ctx.delivery.markRead(conversationId, parsed.data.upTo) });
      }),
    );

    /** The ids this connection's history carried: only those can be confirmed by `received`. */
    let historyIds: readonly string[] = [];
    socket.on("received", (payload: unknown, ack: unknown) =>
      handle(ack, async (reply) => {
        const parsed = upToSchema.safeParse(payload);
        if (!parsed.success) return reply({ ok: false });
        const verdict = await ctx.limits.receipt(conversationId);
        if (!verdict.ok) return reply({ ok: false, ...rateLimited(verdict.retryAfterMs) });
        reply({ ok: await ctx.delivery.markReceived(conversationId, historyIds, parsed.data.upTo) });
      }),
    );

    void sendHistory(ctx, socket, (ids) => (historyIds = ids)).catch((error: unknown) =>
      ctx.warnRepeated(
        `widget-history:${errorKey(error)}`,
        { err: error, conversation_id: conversationId },
        "widget history not sent",
      ),
    );
  });
}

const notOffered: SendAnswer = {
  error: {
    code: "invalid_request",
    message: "invalid payload: no button with this payload is open in this conversation (never offered, or answered)",
  },
};

const erased: SendAnswer = {
  error: { code: "erased", message: "this conversation was erased: start a new session" },
};

/** Closes every widget socket of the conversation, on every process (the adapter carries it): it was erased. */
export function disconnectConversation(ctx: Pick<HubContext, "realtime">, conversationId: string): void {
  ctx.realtime.widget.in(roomOf(conversationId)).disconnectSockets(true);
}

/** A refused connection; the client sees `connect_error` with this message and `data`. */
function refusal(code: string, retryAfterMs?: number): Error {
  return Object.assign(new Error(code), { data: retryAfterMs === undefined ? { code } : { code, retryAfterMs } });
}

/**
 * Sent on every connection: whatever happened while the client was away (a message pushed while its transport
 * was down, a restart) comes with it. Sending is not delivering: the messages stay stored until the client
 * confirms them with `received` (a handler that crashed on them confirms nothing).
 */
async function sendHistory(
  ctx: HubContext,
  socket: WidgetSocket,
  sent: (ids: readonly string[]) => void,
): Promise<void> {
  const { conversationId } = socket.data;
  await socket.join(roomOf(conversationId));
  const auth = (socket.handshake.auth ?? {}) as { lastMessageId?: unknown };
  const [history, jobs] = await Promise.all([
    widgetHistory(ctx.sql, conversationId, auth.lastMessageId),
    runningJobs(ctx.sql, conversationId),
  ]);
  sent(history.messages.map((message) => message.id));
  socket.emit("history", {
    messages: history.messages.map(widgetMessage),
    jobs: jobs.map(widgetRunningJob),
    ...(history.reset ? { reset: true as const } : {}),
  });
}

/**
 * Turns the changes a widget shows as they happen into socket events for the widgets of their conversation:
 * a reply being composed (typing) and a job's progress go to every process's sockets through the adapter; a
 * job starting or ending goes to this process's own sockets, since every process hears every job change
 * (src/jobs/job-events.ts) — the one that commits it emits it at once, so its widgets get a job's end before
 * the reply that gives its result. (Messages reach widgets as deliveries, by the widget channel.) Returns the
 * stop.
 */
export function forwardChangesToWidgets(ctx: HubContext): () => void {
  const { widget } = ctx.realtime;
  return ctx.changes.subscribe((change) => {
    switch (change.type) {
      case "job": {
        const { job } = change;
        const event: WidgetJob = { jobId: job.id, tool: job.tool, status: job.status, at: job.at.toISOString() };
        widget.local.to(roomOf(change.conversationId)).emit("job", event);
        return;
      }
      case "progress":
        widget.to(roomOf(change.conversationId)).emit("progress", {
          jobId: change.job.id,
          tool: change.job.tool,
          text: change.text,
          at: change.at.toISOString(),
          notify: change.notify,
        });
        return;
      case "typing":
        widget.to(roomOf(change.conversationId)).emit("typing", { typing: change.typing });
        return;
      case "escalated":
        // Committed by the sweep of one process: every process's sockets of the conversation hear it.
        widget.to(roomOf(change.conversationId)).emit("escalated", {
          id: change.messageId,
          escalatedTo: change.to,
          at: change.at.toISOString(),
        });
        return;
    }
  });
}
