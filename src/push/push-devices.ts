// The devices of widget conversations that asked for push notifications: Web Push subscriptions and FCM
// registration tokens. One row per address (endpoint or token): registering it again is harmless, and a
// device registered by another conversation follows the newest one (the same browser or app, a new visitor).
import { randomUUID } from "node:crypto";
import type { Sql } from "../db/sql.js";

export type PushPlatform = "web" | "ios" | "android" | "flutter";

/** Devices kept per conversation; registering one more forgets the one registered longest ago. */
export const MAX_DEVICES_PER_CONVERSATION = 10;

export interface DeviceRegistration {
  conversationId: string;
  platform: PushPlatform;
  address: string;
  keys?: { p256dh: string; auth: string } | undefined;
  url?: string | undefined;
}

export function pushDevices(sql: Sql, now: () => Date) {
  return {
    /** The device's id, and whether it is new; undefined when the conversation does not exist. */
    async register(device: DeviceRegistration): Promise<{ id: string; created: boolean } | undefined> {
      const at = now();
      const [row] = await sql.query<{ id: string; created: boolean }>(
        `INSERT INTO "PushDevice" (id, "conversationId", platform, address, keys, url, "createdAt", "updatedAt")
         SELECT $1::uuid, c.id, $3, $4, $5::jsonb, $6, $7, $7 FROM "Conversation" c WHERE c.id = $2::uuid
         ON CONFLICT (address) DO UPDATE SET "conversationId" = excluded."conversationId", platform = excluded.platform,
           keys = excluded.keys, url = excluded.url, "droppedAt" = NULL, "updatedAt" = excluded."updatedAt"
         RETURNING id, id = $1::uuid AS created`,
        [
          randomUUID(),
          device.conversationId,
          device.platform,
          device.address,
          device.keys ? JSON.stringify(device.keys) : null,
          device.url ?? null,
          at,
        ],
      );
      if (!row) return undefined;
      // A visitor can make neither one result fan out to many pushes nor the table grow without bound.
      await sql.query(
        `DELETE FROM "PushDevice" WHERE "conversationId" = $1::uuid AND id NOT IN (
           SELECT id FROM "PushDevice" WHERE "conversationId" = $1::uuid ORDER BY "updatedAt" DESC, id LIMIT $2)`,
        [device.conversationId, MAX_DEVICES_PER_CONVERSATION],
      );
      return row;
    },
  };
}

export type PushDevices = ReturnType<typeof pushDevices>;
