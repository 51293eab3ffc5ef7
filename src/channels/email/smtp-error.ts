// What an SMTP server's answer (or its silence) means for a send, by RFC 5321's reply classes: 5xx refuses for
// good (the message is `failed` with the code), 4xx is a passing refusal and a connection that failed before an
// answer is an outage (both retried with backoff: the message stays committed and is sent again).

export type SmtpVerdict =
  { action: "fail"; code: string; title: string } | { action: "retry"; code: number | null; title: string };

/** nodemailer's error: `responseCode` when the server answered, `code` (ECONNECTION, ETIMEDOUT …) otherwise. */
export function classifySmtpError(error: unknown): SmtpVerdict {
  const { responseCode, response, code, message } = (error ?? {}) as {
    responseCode?: unknown;
    response?: unknown;
    code?: unknown;
    message?: unknown;
  };
  const said = typeof response === "string" ? response.trim() : typeof message === "string" ? message : "";
  // The reply's own code is kept apart (`code`): the title is what follows it.
  const title = said.replace(/^\d{3}[ -]/, "").slice(0, 300);
  if (typeof responseCode === "number" && responseCode >= 500 && responseCode < 600)
    return { action: "fail", code: String(responseCode), title };
  if (typeof responseCode === "number" && responseCode >= 400 && responseCode < 500)
    return { action: "retry", code: responseCode, title };
  // No answer from a server: connection refused or lost, a timeout, DNS — the server may be back later.
  return { action: "retry", code: null, title: typeof code === "string" ? `${code} ${title}`.trim() : title };
}
