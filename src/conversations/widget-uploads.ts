// Files a person uploads from the widget: kept in the database with the conversation whose token uploaded
// them, then named by id in the person's message (`send {text, clientId, attachments: [{uploadId}]}`), where
// they become that message's attachments like a WhatsApp file's. An upload belongs to its conversation only:
// another conversation's id is refused as unknown. The bytes are stored and read back in pieces (UploadPart);
// an upload no message names is deleted after RETAIN_UNATTACHED_UPLOADS (src/retention/).
import { randomUUID } from "node:crypto";
import { plainText } from "../data-text.js";
import type { SqlQuery } from "../db/sql.js";
import { attachmentKind } from "./attachments.js";
import type { StoredAttachment } from "./inbound-attachments.js";

export interface UploadRow {
  id: string;
  mimeType: string;
  name: string | null;
  size: number;
}

/** How many bytes one stored piece holds (about: a piece closes at the first chunk that reaches it). */
export const PART_BYTES = 256 * 1024;

export type StoredUpload = { ok: true; upload: UploadRow } | { ok: false; reason: "empty" | "too_large" };

/**
 * Stores a body as it arrives, a piece of about PART_BYTES at a time, so no upload is held whole in memory:
 * past `maxBytes` it stops reading and keeps nothing. The upload can be named by a message only once it is
 * stored whole (storedAt); one cut off half-way is deleted here, or by retention if this process died.
 */
export async function storeUpload(
  sql: SqlQuery,
  upload: { conversationId: string; mimeType: string; name: string | undefined; at: Date },
  body: AsyncIterable<Uint8Array>,
  maxBytes: number,
  now: () => Date,
): Promise<StoredUpload> {
  const id = randomUUID();
  // A file's name is data: no control or bidi characters reach the console or the model (data-text.ts).
  const name = upload.name === undefined ? null : plainText(upload.name) || null;
  let size = 0;
  let seq = 0;
  let piece: Buffer[] = [];
  let pieceBytes = 0;
  const row = [id, upload.conversationId, upload.mimeType, name, upload.at];
  const writePiece = async () => {
    const bytes = Buffer.concat(piece, pieceBytes);
    piece = [];
    pieceBytes = 0;
    if (seq === 0)
      await sql.query(
        `INSERT INTO "Upload" (id, "conversationId", "mimeType", name, size, "createdAt")
         VALUES ($1::uuid, $2::uuid, $3, $4, 0, $5)`,
        row,
      );
    await sql.query(`INSERT INTO "UploadPart" ("uploadId", seq, bytes) VALUES ($1::uuid, $2, $3)`, [id, seq++, bytes]);
  };
  try {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > maxBytes) {
        await discard(sql, id, seq);
        return { ok: false, reason: "too_large" };
      }
      piece.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
      pieceBytes += chunk.length;
      if (pieceBytes >= PART_BYTES) await writePiece();
    }
  } catch (error) {
    await discard(sql, id, seq).catch(() => undefined);
    throw error;
  }
  if (size === 0) return { ok: false, reason: "empty" };
  if (seq === 0) {
    // A file of one piece (most are): the row and its bytes in one statement.
    await sql.query(
      `WITH up AS (
         INSERT INTO "Upload" (id, "conversationId", "mimeType", name, size, "createdAt", "storedAt")
         VALUES ($1::uuid, $2::uuid, $3, $4, $6, $5, $7) RETURNING id)
       INSERT INTO "UploadPart" ("uploadId", seq, bytes) SELECT id, 0, $8 FROM up`,
      [...row, size, now(), Buffer.concat(piece, pieceBytes)],
    );
  } else {
    if (pieceBytes > 0) await writePiece();
    await sql.query(`UPDATE "Upload" SET size = $2, "storedAt" = $3 WHERE id = $1::uuid`, [id, size, now()]);
  }
  return { ok: true, upload: { id, mimeType: upload.mimeType, name, size } };
}

/** Deletes an upload whose body did not arrive whole (its pieces go with it), if any piece was written. */
async function discard(sql: SqlQuery, id: string, written: number): Promise<void> {
  if (written > 0) await sql.query(`DELETE FROM "Upload" WHERE id = $1::uuid`, [id]);
}

/** A stored upload's bytes, a piece at a time. */
export async function* uploadBytes(sql: SqlQuery, uploadId: string): AsyncGenerator<Buffer> {
  for (let seq = 0; ; seq++) {
    const [part] = await sql.query<{ bytes: Uint8Array }>(
      `SELECT bytes FROM "UploadPart" WHERE "uploadId" = $1::uuid AND seq = $2`,
      [uploadId, seq],
    );
    if (!part) return;
    yield Buffer.from(part.bytes);
  }
}

/**
 * The conversation's stored uploads by id, in the order asked, marked as named by a message (so retention
 * keeps them: RETAIN_UNATTACHED_UPLOADS no longer applies); the ids that are not its own, not stored whole,
 * or not at all. The mark takes the row's lock: retention either deleted the upload first (then it is
 * unknown here) or skips it.
 */
export async function attachUploads(
  sql: SqlQuery,
  conversationId: string,
  ids: readonly string[],
  at: Date,
): Promise<{ attachments: StoredAttachment[]; unknown: number[] }> {
  if (ids.length === 0) return { attachments: [], unknown: [] };
  const rows = await sql.query<UploadRow>(
    `UPDATE "Upload" SET "attachedAt" = coalesce("attachedAt", $3)
     WHERE "conversationId" = $1::uuid AND id = ANY($2::uuid[]) AND "storedAt" IS NOT NULL
     RETURNING id, "mimeType", name, size`,
    [conversationId, ids, at],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  const unknown = ids.flatMap((id, index) => (byId.has(id) ? [] : [index]));
  const attachments = ids.flatMap((id): StoredAttachment[] => {
    const row = byId.get(id);
    if (!row) return [];
    return [
      {
        mimeType: row.mimeType,
        ...(row.name ? { name: row.name } : {}),
        size: row.size,
        source: { kind: "upload", uploadId: id },
      },
    ];
  });
  return { attachments, unknown };
}

/** What a message of files alone says, for whoever reads only text: `[image: photo.png]`, `[file: informe.pdf]`. */
export function filesText(attachments: readonly StoredAttachment[]): string {
  return attachments
    .map((attachment) => {
      const kind = attachmentKind({ url: "", mimeType: attachment.mimeType });
      return `[${kind}${attachment.name ? `: ${attachment.name}` : ""}]`;
    })
    .join(" ");
}
