// The devices of widget conversations that asked for push notifications: Web Push subscriptions and FCM
// registration tokens. One row per address (endpoint or token), and it stays with the conversation that
// registered it: another conversation posting the same address changes nothing (it would otherwise point the
// owner's notifications at its own page), and only the owner can unregister it.
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

/** `taken`: the address is another conversation's device, left as it was. */
export type RegisterOutcome = { kind: "registered"; id: string; created: boolean } | { kind: "taken" };

export function pushDevices(sql: Sql, now: () => Date) {
  return {
    /** What became of the registration; undefined when the conversation does not exist. */
    async register(device: DeviceRegistration): Promise<RegisterOutcome | undefined> {
      const at = now();
      const [row] = await sql.query<{ conversation: boolean; id: string | null; created: boolean | null }>(
        `WITH c AS (SELECT id FROM "Conversation" WHERE id = $2::uuid),
         d AS (
           INSERT INTO "PushDevice" (id, "conversationId", platform, address, keys, url, "createdAt", "updatedAt")
           SELECT $1::uuid, c.id, $3, $4, $5::jsonb, $6, $7, $7 FROM c
           ON CONFLICT (address) DO UPDATE SET platform = excluded.platform, keys = excluded.keys,
             url = excluded.url, "droppedAt" = NULL, "updatedAt" = excluded."updatedAt"
           WHERE "PushDevice"."conversationId" = excluded."conversationId"
           RETURNING id, id = $1::uuid AS created)
         SELECT EXISTS (SELECT 1 FROM c) AS conversation, d.id, d.created FROM (SELECT 1) one LEFT JOIN d ON true`,
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
      if (!row?.conversation) return undefined;
      if (!row.id) return { kind: "taken" };
      // A visitor can make neither one result fan out to many pushes nor the table grow without bound.
      await sql.query(
        `DELETE FROM "PushDevice" WHERE "conversationId" = $1::uuid AND id NOT IN (
           SELECT id FROM "PushDevice" WHERE "conversationId" = $1::uuid ORDER BY "updatedAt" DESC, id LIMIT $2)`,
        [device.conversationId, MAX_DEVICES_PER_CONVERSATION],
      );
      return { kind: "registered", id: row.id, created: row.created === true };
    },

    /** Forgets the conversation's device at this address (nothing when it has none); whether one was forgotten. */
    async unregister(conversationId: string, address: string): Promise<boolean> {
      const rows = await sql.query<{ id: string }>(
        `DELETE FROM "PushDevice" WHERE address = $1 AND "conversationId" = $2::uuid RETURNING id`,
        [address, conversationId],
      );
      return rows.length > 0;
    },
  };
}

export type PushDevices = ReturnType<typeof pushDevices>;
