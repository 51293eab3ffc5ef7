// Routing one outgoing message at the moment of sending: the routing core decides on the conversation as it
// stands, the channel adapter speaks the channel, and the outcome is recorded through delivery-state (on
// the message and on the inputs it answers). A decision that depends on the conversation (hold, wait for
// the person) is recorded only if the conversation has not changed meanwhile; otherwise it is routed again.
import type { Sql } from "../db/sql.js";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { ThrottledLog } from "../log-throttle.js";
import type { Metrics } from "../metrics.js";
import type { ToolRegistry } from "../tools/load-tools.js";
import type { Channel } from "./channel.js";
import { errorKey } from "../log-throttle.js";
import type { ChannelAdapter, SendOutcome, TemplateMessage, TemplateOutcome } from "./channel-port.js";
import type { DeliveryState, Recorded } from "./delivery-state.js";
import { renderTemplate } from "./template.js";
import { headerComponent, headerFile, markHeaderGiven, withoutHeaderFile } from "./template-header.js";
import { attachmentsOf, type Attachment } from "../conversations/attachments.js";
import type { ConversationRow, MessageRow } from "./rows.js";
import { route, type Route, type RouteConversation } from "./route.js";
import {
  isMarketing,
  isUsableStatus,
  markMarketing,
  recordRefusedTemplate,
  REFUSED_TEMPLATE_STATUS,
  MARKETING_HOLD_MS,
  templateStates,
  unusableText,
  type TemplateState,
} from "./template-status.js";
import type { WhatsappTemplate } from "../tools/tool-file.js";
import { jobTool } from "../tools/tool-definition.js";
import { inSpan, inSpanSync } from "../tracing/spans.js";

/** A conversation changing under the same message more often than this is not worth chasing further. */
const MAX_REROUTES = 5;

/** What routing a conversation needs: which channels this hub has configured. */
export interface RouteDeps {
  channels: Record<Channel, Pick<ChannelAdapter, "enabled">>;
}

/** What delivering a message needs: the channels, delivery state, the push requester, tool files. */
export interface DeliverDeps {
  config: { meta: Pick<Config["meta"], "defaultTemplate" | "fallbackTemplate"> };
  channels: Record<Channel, ChannelAdapter>;
  delivery: DeliveryState;
  /** The store, for recording which file a template's header carried (template-header.ts). */
  sql: Sql;
  push: { request(messageId: string, delayMs?: number): Promise<void> };
  tools: ToolRegistry;
  metrics: Pick<Metrics, "deliveries" | "sendFailures" | "marketingHolds">;
  log: Logger;
  warnRepeated: ThrottledLog;
  now: () => Date;
}

export function routeConversation(
  ctx: RouteDeps,
  conversation: ConversationRow,
  templateAvailable: boolean,
): RouteConversation {
  return {
    channel: conversation.channel,
    control: conversation.control === "human" ? "human" : "agent",
    lastInboundAt: conversation.lastInboundAt,
    templateSentAt: conversation.templateSentAt,
    windowClosedAt: conversation.windowClosedAt,
    channelEnabled: ctx.channels[conversation.channel]?.enabled ?? false,
    templateAvailable,
    unreachable: conversation.unreachableAt != null,
    marketingHeldUntil: conversation.marketingHeldUntil ?? null,
  };
}

const failed = (outcome: { code: string; title?: string | undefined }): Recorded => ({
  status: "failed",
  decision: "failed",
  reason: `${outcome.code}${outcome.title ? ` ${outcome.title}` : ""}`,
});

/** One outgoing message, in a `send` span: its route decision, the channel's call, the recorded outcome. */
export function deliver(ctx: DeliverDeps, start: ConversationRow, given: MessageRow): Promise<MessageRow> {
  return inSpan(
    "send",
    {
      attributes: {
        "hub.conversation.id": start.id,
        "hub.channel": start.channel,
        "hub.message.id": given.id,
        ...(given.jobId ? { "hub.job.id": given.jobId } : {}),
      },
    },
    async (span) => {
      const sent = await deliverMessage(ctx, start, given);
      span.setAttribute("hub.message.status", sent.status);
      return sent;
    },
  );
}

async function deliverMessage(ctx: DeliverDeps, start: ConversationRow, given: MessageRow): Promise<MessageRow> {
  let conversation = start;
  let message = given;
  const author = message.role === "human" ? "human" : "agent";
  const channel = ctx.channels[conversation.channel];
  for (let attempt = 0; ; attempt++) {
    // Whether a template could bring the person back; which one is looked up only when it is needed.
    const templates = author === "agent" && Boolean(channel?.sendTemplate);
    const routeWith = (facts: Partial<RouteConversation>): Route =>
      inSpanSync("route", { "hub.channel": conversation.channel }, (span) => {
        const made = route({ ...routeConversation(ctx, conversation, templates), ...facts }, { author }, ctx.now());
        span.setAttributes({ "hub.route.action": made.action, "hub.route.reason": made.reason });
        return made;
      });
    let decided = routeWith({});
    if (decided.action === "template") {
      // One template per waiting period: another message of this turn may have just sent one.
      conversation = (await ctx.delivery.readConversation(conversation.id)) ?? conversation;
      decided = routeWith({});
    }
    // The template path: which template, and whether Meta lets it go now (its status, the person's
    // marketing hold) — the router decides on those once they are known.
    const chosen = decided.action === "template" ? await templateFor(ctx, conversation, message) : undefined;
    if (chosen?.template) decided = routeWith({ template: { usable: chosen.usable, marketing: chosen.marketing } });
    let recorded: Recorded;
    let guarded = false;
    if (decided.action === "push" || decided.action === "send") {
      const outcome: SendOutcome = await inSpan(
        "channel.send",
        { attributes: { "hub.channel": conversation.channel } },
        async (span) => {
          const sent = await channel!.send(conversation, message, {
            humanAgentTag: decided.reason === "human_agent_tag",
          });
          span.setAttribute("hub.send.status", sent.status);
          return sent;
        },
      );
      if (outcome.status === "window_closed") {
        // The channel knows better than our clock: the window is closed. Remember it and decide again.
        conversation = await ctx.delivery.markWindowClosed(conversation.id);
        continue;
      }
      recorded =
        outcome.status === "failed"
          ? failed(outcome)
          : {
              status: outcome.status,
              decision: outcome.decision,
              reason:
                "fallback" in outcome && outcome.fallback ? `${decided.reason}; ${outcome.fallback}` : decided.reason,
              ...("externalId" in outcome && outcome.externalId ? { externalId: outcome.externalId } : {}),
            };
    } else if (decided.action === "template") {
      const template = chosen?.template;
      if (chosen && template) {
        const sent: TemplateOutcome = await inSpan(
          "channel.send_template",
          { attributes: { "hub.channel": conversation.channel, "hub.template.name": template.name } },
          () => channel!.sendTemplate!(conversation, template),
        );
        if (sent.status === "failed" && sent.code === MARKETING_LIMIT_CODE) {
          // Meta's per-person marketing limit: no marketing template to this person for 24 hours from now,
          // never sooner; the result waits, and is routed again once the hold is over (the sweep).
          const until = new Date(ctx.now().getTime() + MARKETING_HOLD_MS);
          await ctx.delivery.holdMarketing(conversation.id, until);
          await markMarketing(ctx.sql, template, ctx.now());
          ctx.metrics.marketingHolds.inc();
          recorded = {
            status: "awaiting_reply",
            decision: "awaiting_reply",
            reason: `marketing_limit; until ${until.toISOString()} (${sent.code}${sent.title ? ` ${sent.title}` : ""})`,
          };
        } else if (sent.status === "failed" && REFUSED_TEMPLATE_STATUS[sent.code]) {
          // Paused or disabled before Meta's webhook said so: recorded, and routed again (a fallback, or the
          // result waits for the template's approval). Each candidate is refused at most once.
          await recordRefusedTemplate(
            ctx.sql,
            template,
            REFUSED_TEMPLATE_STATUS[sent.code]!,
            `${sent.code}${sent.title ? ` ${sent.title}` : ""}`,
            ctx.now(),
          );
          continue;
        } else if (sent.status === "failed") recorded = failed(sent);
        else {
          // The file went with the template: the rest follows the person's answer, that one not again.
          if (chosen.header) {
            await markHeaderGiven(ctx.sql, message, chosen.header);
            // Should it be routed again (the person answered meanwhile), it goes without that file.
            message = { ...message, attachments: withoutHeaderFile(message.attachments, chosen.header) };
          }
          await ctx.delivery.recordTemplate(conversation.id, {
            name: template.name,
            data: { template, for: message.id },
            externalId: sent.externalId || null,
          });
          recorded = { status: "awaiting_reply", decision: "template", reason: "window_closed" };
        }
      } else {
        recorded = { status: "awaiting_reply", decision: "awaiting_reply", reason: "window_closed_no_template" };
      }
      guarded = true;
    } else if (decided.reason === "template_unavailable" || decided.reason === "marketing_limit") {
      // Which template and why, with the reason: the console shows it, and a release finds it by its prefix.
      const why =
        decided.reason === "template_unavailable"
          ? chosen?.unusable.map(unusableText).join(", ")
          : `until ${conversation.marketingHeldUntil?.toISOString() ?? ""}`;
      recorded = {
        status: decided.decision,
        decision: decided.decision,
        reason: why ? `${decided.reason}; ${why}` : decided.reason,
      };
      guarded = true;
    } else {
      // An unreachable person's failure says why, as the channel said it: `opted_out (unreachable)` (SMS STOP).
      const reason =
        decided.reason === "unreachable" && conversation.unreachableReason
          ? `${conversation.unreachableReason} (unreachable)`
          : decided.reason;
      recorded = { status: decided.decision, decision: decided.decision, reason };
      // Held or waiting only while what decided it stands (a hand-back or the person's message may land).
      guarded = decided.action === "hold" || decided.action === "await_reply";
    }

    const outcome = await ctx.delivery.recordDecision(
      message,
      recorded,
      guarded ? { control: conversation.control, lastInboundAt: conversation.lastInboundAt } : undefined,
    );
    if (outcome === "stale" && attempt < MAX_REROUTES) {
      conversation = (await ctx.delivery.readConversation(conversation.id)) ?? conversation;
      continue;
    }
    const decidedMessage = outcome === "stale" ? message : outcome.message;
    if (outcome !== "stale" && outcome.pushesOwed > 0) {
      // Owed in the decision's commit; a failure to ask now is repaired by the sweep.
      await ctx.push
        .request(message.id)
        .catch((error: unknown) =>
          ctx.warnRepeated(
            `push:${errorKey(error)}`,
            { err: error, message_id: message.id },
            "push not queued; the sweep will",
          ),
        );
    }
    ctx.log.info(
      {
        conversation_id: conversation.id,
        job_id: message.jobId,
        message_id: message.id,
        decision: recorded.decision,
        reason: recorded.reason,
      },
      "delivery decision",
    );
    ctx.metrics.deliveries.inc({ channel: conversation.channel, decision: recorded.decision });
    if (recorded.decision === "failed") {
      ctx.metrics.sendFailures.inc({
        channel: conversation.channel,
        code: (recorded.reason ?? "").split(" ")[0] ?? "",
      });
    }
    return decidedMessage;
  }
}

/** Meta's per-person marketing limit ("not delivered to maintain healthy ecosystem engagement"). */
const MARKETING_LIMIT_CODE = "131049";

/** The template a message would go with, and what routing needs to know of it. */
interface ChosenTemplate {
  template: TemplateMessage | undefined;
  header?: Attachment;
  /** Meta lets it be sent (none of the candidates is usable: false). */
  usable: boolean;
  /** It is a marketing template (Meta's per-person limit applies to it). */
  marketing: boolean;
  /** The candidates Meta said cannot be sent now, in order, with why. */
  unusable: TemplateState[];
}

/**
 * The template for this message: its tool's `whatsapp_template`, else the hub-wide default. A tool template
 * with a file header carries the result's first file of its kind (the message's own, for a direct message);
 * with no such file it cannot be sent, and the default is used instead. When Meta has paused, disabled or
 * rejected it, its `fallback`, then WHATSAPP_FALLBACK_TEMPLATE, go instead; a marketing template is passed
 * over for a usable one that is not while Meta's per-person limit holds the person.
 */
async function templateFor(
  ctx: DeliverDeps,
  conversation: ConversationRow,
  message: MessageRow,
): Promise<ChosenTemplate> {
  const job = await ctx.delivery.jobOf(message);
  // The template of the definition the job started with, whatever a reload changed since.
  const own = job
    ? jobTool(ctx.tools, { tool: job.tool, toolDefinition: job.toolDefinition ?? null })?.async?.template
    : undefined;
  const files = attachmentsOf(job?.attachments).length
    ? attachmentsOf(job?.attachments)
    : attachmentsOf(message.attachments);
  const header = own?.header ? headerFile(own.header, files) : undefined;
  const declared = own && (!own.header || header) ? own : ctx.config.meta.defaultTemplate;
  const none: ChosenTemplate = { template: undefined, usable: false, marketing: false, unusable: [] };
  if (!declared) return none;
  const result = job?.result as { message?: string } | null | undefined;
  const vars = {
    "result.message": result?.message ?? job?.error ?? message.text ?? "",
    "tool.name": job?.tool ?? "",
    "contact.name": conversation.name ?? "",
  };
  const candidates: WhatsappTemplate[] = [declared];
  if (own?.fallback) candidates.push(own.fallback);
  if (ctx.config.meta.fallbackTemplate) candidates.push(ctx.config.meta.fallbackTemplate);
  const stateOf = await templateStates(ctx.sql, candidates);
  const held = conversation.marketingHeldUntil != null && conversation.marketingHeldUntil > ctx.now();
  const usable = candidates.filter((candidate) => isUsableStatus(stateOf(candidate)?.status));
  const pick = usable.find((candidate) => !(held && isMarketing(stateOf(candidate)))) ?? usable[0] ?? candidates[0]!;
  const unusable = candidates
    .map((candidate) => stateOf(candidate))
    .filter((state): state is TemplateState => state !== undefined && !isUsableStatus(state.status));
  const facts = { usable: usable.length > 0, marketing: isMarketing(stateOf(pick)), unusable };
  if (pick !== own || !own.header || !header) return { template: renderTemplate(pick, vars), ...facts };
  return { template: renderTemplate(own, vars, headerComponent(own.header, header)), header, ...facts };
}
