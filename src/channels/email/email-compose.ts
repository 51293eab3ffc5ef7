// What one outgoing message becomes as an e-mail: a plain text part and a simple HTML part saying the same,
// the choices as a numbered list the person answers by replying with the number or the words (email-choice.ts),
// the hub's own files attached (their bytes read by the channel) and any other file as a link. Pure.
import {
  attachmentLine,
  attachmentName,
  attachmentType,
  type Attachment,
  type Button,
} from "../../conversations/attachments.js";

export interface ComposedEmail {
  text: string;
  html: string;
  /** Files to attach, by their link (the hub's own `/media/` URLs). */
  attach: { url: string; filename: string; contentType: string }[];
  /** What could not be shown as given, for the decision's reason. */
  notes: string[];
}

const CHOICES_HINT = "Reply with the number or the words of your choice:";

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

const paragraphs = (text: string) =>
  text
    .split(/\n{2,}/)
    .filter((block) => block.trim() !== "")
    .map((block) => `<p>${escapeHtml(block).replace(/\n/g, "<br>")}</p>`)
    .join("\n");

export function composeEmail(
  text: string,
  attachments: readonly Attachment[],
  buttons: readonly Button[],
  isOwnFile: (url: string) => boolean,
): ComposedEmail {
  const attach = attachments
    .filter((file) => isOwnFile(file.url))
    .map((file) => ({ url: file.url, filename: attachmentName(file), contentType: attachmentType(file) }));
  const linked = attachments.filter((file) => !isOwnFile(file.url));
  const notes: string[] = [];
  if (buttons.length > 0) notes.push("choices as numbered lines");
  if (linked.length > 0) notes.push("files as links");
  const choices = buttons.map((button, i) => `${i + 1}. ${button.title}`);
  const captions = attach.flatMap((file) => {
    const caption = attachments.find((a) => a.url === file.url)?.caption;
    return caption ? [`${file.filename}: ${caption}`] : [];
  });
  const plain = [
    text.trim(),
    captions.join("\n"),
    linked.map((file) => attachmentLine(file)).join("\n"),
    choices.length ? `${CHOICES_HINT}\n${choices.join("\n")}` : "",
  ]
    .filter(Boolean)
    .join("\n\n");
  const html = [
    paragraphs(text.trim()),
    captions.length ? paragraphs(captions.join("\n")) : "",
    linked.length
      ? `<ul>${linked
          .map((file) => `<li><a href="${escapeHtml(file.url)}">${escapeHtml(attachmentName(file))}</a></li>`)
          .join("")}</ul>`
      : "",
    choices.length
      ? `<p>${escapeHtml(CHOICES_HINT)}</p>\n<ol>${buttons.map((button) => `<li>${escapeHtml(button.title)}</li>`).join("")}</ol>`
      : "",
  ]
    .filter(Boolean)
    .join("\n");
  return { text: plain, html: `<!doctype html>\n<html><body>\n${html}\n</body></html>`, attach, notes };
}
