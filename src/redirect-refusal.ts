// Calls that carry secrets (a backend's key, a callback URL, a signed turn) go to the address configured and
// nowhere else: a redirect is never followed — it would re-send them to whatever host the answer names — and
// counts as a failure that says where it pointed.

/** Why a redirect answer is refused, or undefined when the answer is not one. */
export function refusedRedirect(who: string, requestUrl: string, response: Response): string | undefined {
  return redirectRefusal(who, requestUrl, response.status, response.headers.get("location"));
}

/** The same, from the status and Location of any HTTP client's answer. */
export function redirectRefusal(
  who: string,
  requestUrl: string,
  status: number,
  location: string | null | undefined,
): string | undefined {
  if (status < 300 || status > 399) return undefined;
  let target = "without a Location";
  if (location) {
    try {
      target = `to ${new URL(location, requestUrl).host}`;
    } catch {
      target = "to an invalid Location";
    }
  }
  return `${who} answered ${status} (redirect ${target}), which is not followed`;
}
