// Files a person uploads from the widget: kept in the database with the conversation whose token uploaded
// them, then named by id in the person's message (`send {text, clientId, attachments: [{uploadId}]}`), where
// they become that message's attachments like a WhatsApp file's. An upload belongs to its conversation only:
// another conversation's id is refused as unknown.
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

export async function storeUpload(
  sql: SqlQuery,
  upload: { conversationId: string; mimeType: string; name: string | undefined; bytes: Buffer; at: Date },
): Promise<UploadRow> {
  const id = randomUUID();
  // A file's name is data: no control or bidi characters reach the console or the model (data-text.ts).
  const name = upload.name === undefined ? null : plainText(upload.name) || null;
  await sql.query(
    `INSERT INTO "Upload" (id, "conversationId", "mimeType", name, size, bytes, "createdAt")
     VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6, $7)`,
    [id, upload.conversationId, upload.mimeType, name, upload.bytes.length, upload.bytes, upload.at],
  );
  return { id, mimeType: upload.mimeType, name, size: upload.bytes.length };
}

/** The conversation's uploads by id, in the order asked; the ids that are not its own (or not at all). */
export async function uploadsOf(
  sql: SqlQuery,
  conversationId: string,
  ids: readonly string[],
): Promise<{ attachments: StoredAttachment[]; unknown: number[] }> {
  const rows = await sql.query<UploadRow>(
    `SELECT id, "mimeType", name, size FROM "Upload" WHERE "conversationId" = $1::uuid AND id = ANY($2::uuid[])`,
    [conversationId, ids],
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
