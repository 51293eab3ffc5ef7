// The widget channel (web, iOS, Android, Flutter): push to the conversation's room on any hub process;
// a client's ack marks the message delivered; with no socket, or no ack, it stays stored for the history.
import type { Realtime } from "../../realtime.js";
import type { RunningJobRow } from "../../conversations/widget-history.js";
import { humanAgentName } from "../../conversations/timeline.js";
import { noticeOf } from "../../conversations/notice.js";
import type { ChannelAdapter, SendConversation, SendMessage, SendOutcome } from "../../delivery/channel-port.js";
import type { MessageRow } from "../../delivery/rows.js";
import {
  MESSAGE_ACK_TIMEOUT_MS,
  roomOf,
  type WidgetAttachment,
  type WidgetMessage,
  type WidgetRunningJob,
} from "./events.js";
import {
  attachmentKind,
  attachmentName,
  attachmentsOf,
  attachmentType,
  buttonsOf,
  type Attachment,
} from "../../conversations/attachments.js";

function widgetAttachment(attachment: Attachment): WidgetAttachment {
  return {
    url: attachment.url,
    name: attachmentName(attachment),
    mimeType: attachmentType(attachment),
    kind: attachmentKind(attachment),
    ...(attachment.caption ? { caption: attachment.caption } : {}),
  };
}

export function widgetMessage(message: SendMessage & Partial<Pick<MessageRow, "escalatedTo">>): WidgetMessage {
  const senderName = message.role === "human" ? humanAgentName(message.data) : undefined;
  const attachments = attachmentsOf(message.attachments).map(widgetAttachment);
  const buttons = buttonsOf(message.buttons).map((button) => ({
    title: button.title,
    ...(button.payload ? { payload: button.payload } : {}),
    ...(button.reusable ? { reusable: true as const } : {}),
  }));
  return {
    id: message.id,
    role: message.role as WidgetMessage["role"],
    text: message.text ?? "",
    createdAt: message.createdAt.toISOString(),
    clientId: message.clientId,
    jobId: message.jobId,
    ...(senderName ? { senderName } : {}),
    ...(noticeOf(message.data) ? { kind: "notice" as const } : {}),
    ...(attachments.length ? { attachments } : {}),
    ...(buttons.length ? { buttons } : {}),
    ...(message.escalatedTo === "whatsapp" ? { escalatedTo: "whatsapp" as const } : {}),
  };
}

export function widgetRunningJob(job: RunningJobRow): WidgetRunningJob {
  return {
    jobId: job.id,
    tool: job.tool,
    status: "running",
    at: job.createdAt.toISOString(),
    progress: job.progress && {
      jobId: job.id,
      tool: job.tool,
      text: job.progress.text,
      at: job.progress.createdAt.toISOString(),
      notify: job.progress.delivered,
    },
  };
}

/** The name a human reply was recorded with (`data.agent.name`, see src/console/control.ts). */
export function widgetChannel(realtime: Realtime): ChannelAdapter {
  return {
    enabled: true,
    async send(conversation: SendConversation, message: SendMessage): Promise<SendOutcome> {
      try {
        const acks = await realtime.widget
          .to(roomOf(conversation.id))
          .timeout(MESSAGE_ACK_TIMEOUT_MS)
          .emitWithAck("message", widgetMessage(message));
        return acks.length > 0 ? { status: "delivered", decision: "live" } : { status: "stored", decision: "stored" };
      } catch (error) {
        // Pushed, but not every socket acked in time. Only an ack proves the person has it: if one socket
        // acked, it is delivered; if none did, it stays stored and comes with the next connection's history.
        const acks = (error as { responses?: unknown[] }).responses ?? [];
        return acks.length > 0 ? { status: "delivered", decision: "live" } : { status: "stored", decision: "live" };
      }
    },
  };
}
