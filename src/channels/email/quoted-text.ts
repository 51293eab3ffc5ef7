// What a person newly wrote in a reply, without the earlier messages their client quoted: lines starting
// with ">" (wherever they are), and everything from an "On … wrote:" attribution (in the common languages,
// also split over two lines as Gmail wraps it), Outlook's "-----Original Message-----" and "From: … Sent: …"
// header block, Apple Mail's "Begin forwarded message:", and a signature after "-- ". The agent reads this;
// the whole text stays in the message's data. When stripping would leave nothing, the whole text is kept
// (someone who only quoted).

const ATTRIBUTION =
  /^(On\s.+(wrote|schrieb|a écrit|escribió|ha scritto|schreef)\s*:|Am\s.+schrieb.*:|Le\s.+a écrit\s*:|El\s.+escribió\s*:|Il\s.+ha scritto\s*:|Op\s.+schreef.*:)\s*$/i;
const SEPARATORS = [
  /^-{2,}\s*Original Message\s*-{2,}\s*$/i,
  /^-{2,}\s*Ursprüngliche Nachricht\s*-{2,}\s*$/i,
  /^-{2,}\s*Forwarded message\s*-{2,}\s*$/i,
  /^_{10,}\s*$/,
  /^Begin forwarded message:\s*$/i,
];
/** Outlook's quoted header: "From: …" followed within a few lines by "Sent:"/"Date:" and "To:"/"Subject:". */
const OUTLOOK_FROM = /^\*?(From|Von|De)\s*:\*?\s/i;
const OUTLOOK_NEXT = /^\*?(Sent|Date|Gesendet|Envoyé|To|An|Subject|Betreff)\s*:/i;

export function newText(full: string): string {
  const lines = full.replace(/\r\n?/g, "\n").split("\n");
  let end = lines.length;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    const joined = `${line} ${(lines[i + 1] ?? "").trim()}`.trim();
    if (ATTRIBUTION.test(line) || (/^On\s/i.test(line) && ATTRIBUTION.test(joined))) {
      end = i;
      break;
    }
    if (SEPARATORS.some((pattern) => pattern.test(line))) {
      end = i;
      break;
    }
    if (OUTLOOK_FROM.test(line) && lines.slice(i + 1, i + 4).some((next) => OUTLOOK_NEXT.test(next.trim()))) {
      end = i;
      break;
    }
    // A signature: everything after the standard "-- " line.
    if (lines[i] === "-- ") {
      end = i;
      break;
    }
  }
  // Quoted lines go wherever they are: a reply written between quotes keeps its own lines.
  const kept = lines
    .slice(0, end)
    .filter((line) => !line.trimStart().startsWith(">"))
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return kept || full.trim();
}
