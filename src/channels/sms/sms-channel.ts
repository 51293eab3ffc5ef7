// SMS through Twilio's Messages API: each outgoing message as one or more texts (sms-payloads.ts) from the
// number the person wrote to (the conversation's account) or through the Messaging Service, with the hub's
// status URL on the last, whose statuses the message follows. SMS has no window: the router sends a late
// result at any time, unless the person opted out (Conversation.unreachableAt).
import type { Sql } from "../../db/sql.js";
import type { ChannelAdapter, SendConversation, SendMessage, SendOutcome } from "../../delivery/channel-port.js";
import { SendDeferredError } from "../../delivery/send-deferred.js";
import { TEXT_LIMITS } from "../../delivery/text-limits.js";
import { attachmentsOf, buttonsOf } from "../../conversations/attachments.js";
import { sentParts } from "../meta/sent-parts.js";
import type { SmsConfig } from "./sms-config.js";
import { markOptedOut, OPTED_OUT } from "./sms-opt-out.js";
import { smsPlan } from "./sms-payloads.js";
import { classifyTwilioError } from "./twilio-error.js";
import type { TwilioClient } from "./twilio-client.js";

const MAX_TEXT = TEXT_LIMITS.sms!;

/** Where Twilio's status callbacks go. */
export const SMS_STATUS_PATH = "/webhooks/twilio/status";

export interface SmsChannelDeps {
  config: SmsConfig;
  client: TwilioClient;
  /** The store: a person Twilio says unsubscribed (21610) is marked so on their conversation. */
  sql: Sql;
  /** The hub's public URL (PUBLIC_URL, its port known once the server listens). */
  publicUrl: () => string;
  now: () => Date;
}

type Failed = Extract<SendOutcome, { status: "failed" }>;

/**
 * The sender fields of a send: the conversation's own number (the one the person wrote to), else the first;
 * with a Messaging Service, the service — and the person's number of it when known, which Twilio then uses.
 */
function senderOf(config: SmsConfig, conversation: SendConversation): [string, string][] | Failed {
  const own = conversation.account || undefined;
  if (config.messagingServiceSid)
    return [["MessagingServiceSid", config.messagingServiceSid], ...(own ? [["From", own] as [string, string]] : [])];
  const from = own ? config.from.find((number) => number === own) : config.from[0];
  if (from) return [["From", from]];
  return {
    status: "failed",
    decision: "failed",
    code: "account_off",
    title: `this hub does not send from ${conversation.account}`,
  };
}

export function smsChannel(deps: SmsChannelDeps): ChannelAdapter {
  const parts = sentParts();
  return {
    enabled: true,
    async send(conversation: SendConversation, message: SendMessage): Promise<SendOutcome> {
      const sender = senderOf(deps.config, conversation);
      if (!Array.isArray(sender)) return sender;
      const plan = smsPlan(message.text ?? "", attachmentsOf(message.attachments), buttonsOf(message.buttons), {
        mms: deps.config.mms,
        limit: MAX_TEXT,
      });
      const resumed = parts.progress(message.id);
      let externalId = resumed.externalId;
      for (const [index, part] of plan.parts.entries()) {
        if (index < resumed.done) continue;
        const last = index === plan.parts.length - 1;
        const answer = await deps.client.createMessage([
          ["To", conversation.contact],
          ...sender,
          ["Body", part.body],
          ...part.mediaUrls.map((url): [string, string] => ["MediaUrl", url]),
          // Only the last text reports its statuses: the message is delivered once it is.
          ...(last ? [["StatusCallback", `${deps.publicUrl()}${SMS_STATUS_PATH}`] as [string, string]] : []),
        ]);
        if (!answer.ok) {
          const decided = classifyTwilioError(answer.error);
          // A deferred send throws here and resumes at this part; anything else ends the message.
          if (decided.action === "retry") throw new SendDeferredError(answer.error.code, answer.error.message);
          parts.finished(message.id);
          const title = `${answer.error.code ?? answer.error.httpStatus ?? ""} ${answer.error.message}`.trim();
          if (decided.action === "opted_out") {
            await markOptedOut(deps.sql, conversation.id, deps.now());
            return { status: "failed", decision: "failed", code: OPTED_OUT, title };
          }
          return {
            status: "failed",
            decision: "failed",
            code: String(answer.error.code ?? answer.error.httpStatus ?? "no_answer"),
            title: answer.error.message,
          };
        }
        externalId = answer.data.sid;
        if (plan.parts.length > 1) parts.accepted(message.id, index + 1, externalId);
      }
      parts.finished(message.id);
      return {
        status: "sent",
        decision: "sent",
        externalId,
        ...(plan.notes.length > 0 ? { fallback: `fallback: ${plan.notes.join(", ")}` } : {}),
      };
    },
  };
}
