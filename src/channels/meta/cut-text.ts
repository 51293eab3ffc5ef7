// A reply longer than the channel allows is cut to its limit (docs/operations.md "Known limits"), never in the middle of
// a character: half of a UTF-16 surrogate pair (an emoji cut in two) is not text Meta can show.
export function cutText(text: string, max: number): string {
  const cut = text.slice(0, max);
  return cut.length < text.length && /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}
