// A template whose header is a file (a tool's `whatsapp_template.header: document | image | video`): the
// result's first file of that kind goes with the template itself, so the person has the report before they
// answer. Once the template is sent, that file is taken off what is still owed — the result's turn input,
// and the message the template was for (a direct message is sent as it is after the answer; a reply sent
// after all, when the person answered while the template was being recorded) — so the rest follows their
// answer, once.
import type { SqlQuery } from "../db/sql.js";
import {
  attachmentKind,
  attachmentName,
  attachmentsOf,
  type Attachment,
  type AttachmentKind,
} from "../conversations/attachments.js";
import type { WhatsappTemplate } from "../tools/tool-file.js";
import type { MessageRow } from "./rows.js";

export type HeaderFormat = NonNullable<WhatsappTemplate["header"]>;

const KIND_OF: Record<HeaderFormat, AttachmentKind> = { document: "file", image: "image", video: "video" };

/** The first file that fits the header's format; undefined when none does (the template cannot be sent). */
export function headerFile(format: HeaderFormat, files: readonly Attachment[]): Attachment | undefined {
  return files.find((file) => attachmentKind(file) === KIND_OF[format]);
}

/** Cloud API's header component for a media header: one parameter of the header's type, by link. */
export function headerComponent(format: HeaderFormat, file: Attachment): Record<string, unknown> {
  const media = { link: file.url, ...(format === "document" ? { filename: attachmentName(file) } : {}) };
  return { type: "header", parameters: [{ type: format, [format]: media }] };
}

/**
 * The file went with the template: off the message it was for (a direct message will be sent as it is; a
 * reply may be routed again), and off the inputs the waiting reply answers (their next turn composes the
 * reply again from them).
 */
export async function markHeaderGiven(
  sql: SqlQuery,
  message: Pick<MessageRow, "id" | "turnId">,
  file: Attachment,
): Promise<void> {
  await sql.query(
    `WITH direct AS (
       UPDATE "Message" SET attachments = nullif(attachments - (
           SELECT (i - 1)::int FROM jsonb_array_elements(attachments) WITH ORDINALITY AS a(v, i)
           WHERE v->>'url' = $3 ORDER BY i LIMIT 1), '[]'::jsonb)
       WHERE id = $1::uuid AND attachments @> jsonb_build_array(jsonb_build_object('url', $3::text))
       RETURNING id)
     UPDATE "TurnInput" SET payload = jsonb_set(payload, '{attachments}', (payload->'attachments') - (
         SELECT (i - 1)::int FROM jsonb_array_elements(payload->'attachments') WITH ORDINALITY AS a(v, i)
         WHERE v->>'url' = $3 ORDER BY i LIMIT 1)) || jsonb_build_object('givenWithTemplate', $4::jsonb)
     WHERE $2::uuid IS NOT NULL AND "turnId" = $2::uuid AND kind = 'tool_result'
       AND payload->'attachments' @> jsonb_build_array(jsonb_build_object('url', $3::text))`,
    [message.id, message.turnId, file.url, JSON.stringify([file])],
  );
}

/** The message's files without the one the header carried (the first with its URL), as the store now has them. */
export function withoutHeaderFile(attachments: unknown, file: Attachment): Attachment[] | null {
  const files = attachmentsOf(attachments);
  const at = files.findIndex((each) => each.url === file.url);
  if (at < 0) return files.length ? files : null;
  const rest = files.filter((_, i) => i !== at);
  return rest.length ? rest : null;
}
