// Push notifications, as the rest of the hub sees them: the device registry, the send state, the services
// that are configured, and how a message's owed sends are asked for (a queue job carrying its id).
import type { Queue } from "bullmq";
import type { PushConfig } from "./push-config.js";
import type { Sql } from "../db/sql.js";
import { fcmAccessTokens } from "./fcm-auth.js";
import { fcmSender } from "./fcm-sender.js";
import { pushDevices, type PushDevices } from "./push-devices.js";
import { pushSends, type PushSends } from "./push-sends.js";
import type { PushSender } from "./push-sender.js";
import { webPushSender } from "./web-push-sender.js";

export interface PushJob {
  messageId: string;
}

export interface Push {
  devices: PushDevices;
  sends: PushSends;
  /** The configured services; a device of a service that is off is skipped. */
  webPush: PushSender | undefined;
  fcm: PushSender | undefined;
  /** The public key browsers subscribe with, when Web Push is on. */
  webPushKey: string | undefined;
  /** Asks for the message's owed sends to go out, now or after `delayMs`. */
  request(messageId: string, delayMs?: number): Promise<void>;
}

export function createPush(config: PushConfig, sql: Sql, queue: Queue<PushJob>, now: () => Date): Push {
  return {
    devices: pushDevices(sql, now),
    sends: pushSends(sql, now),
    webPush: config.webPush && webPushSender(config.webPush),
    fcm:
      config.fcm &&
      fcmSender(
        { baseUrl: config.fcm.baseUrl, projectId: config.fcm.account.projectId },
        fcmAccessTokens(config.fcm.account),
      ),
    webPushKey: config.webPush?.publicKey,
    async request(messageId, delayMs = 0) {
      // Workers re-read everything from the database; a lost or repeated job is harmless (the sweep and the claim).
      await queue.add("push", { messageId }, { delay: delayMs, removeOnComplete: true, removeOnFail: 1000 });
    },
  };
}
