// How each Meta error drives delivery, as a table.
import { describe, expect, it } from "vitest";
import { classifyGraphError, parseGraphError } from "../src/channels/meta/graph-error.js";

const body = (code: number, subcode?: number) => ({
  error: {
    message: `(#${code}) something`,
    type: "OAuthException",
    code,
    ...(subcode ? { error_subcode: subcode } : {}),
    fbtrace_id: "x",
  },
});

const rows: [string, number | null, unknown, ReturnType<typeof classifyGraphError>][] = [
  ["131047 re-engagement: template path", 400, body(131047), { action: "window_closed" }],
  ["Instagram outside the allowed window", 400, body(10, 2018278), { action: "window_closed" }],
  ["130429 throughput", 400, body(130429), { action: "retry", recipientOnly: false }],
  ["131056 pair rate: that recipient only", 400, body(131056), { action: "retry", recipientOnly: true }],
  ["4 application request limit", 400, body(4), { action: "retry", recipientOnly: false }],
  ["80007 WABA rate limit", 400, body(80007), { action: "retry", recipientOnly: false }],
  ["1 unknown error", 400, body(1), { action: "retry", recipientOnly: false }],
  ["2 service unavailable", 400, body(2), { action: "retry", recipientOnly: false }],
  ["131000 something went wrong", 400, body(131000), { action: "retry", recipientOnly: false }],
  ["131016 service overloaded", 400, body(131016), { action: "retry", recipientOnly: false }],
  ["HTTP 500 without a body", 500, undefined, { action: "retry", recipientOnly: false }],
  ["HTTP 503 with a permanent-looking code", 503, body(100), { action: "retry", recipientOnly: false }],
  ["HTTP 429", 429, body(4), { action: "retry", recipientOnly: false }],
  ["network error before a response", null, undefined, { action: "retry", recipientOnly: false }],
  ["131026 undeliverable", 400, body(131026), { action: "fail" }],
  ["132000 template parameter count", 400, body(132000), { action: "fail" }],
  ["132001 template does not exist", 400, body(132001), { action: "fail" }],
  ["100 invalid parameter", 400, body(100), { action: "fail" }],
  ["131008 required parameter missing", 400, body(131008), { action: "fail" }],
  ["131009 parameter value invalid", 400, body(131009), { action: "fail" }],
  ["190 expired token", 401, body(190), { action: "fail" }],
  ["Instagram code 10 without the window subcode", 400, body(10), { action: "fail" }],
];

describe("Meta errors", () => {
  it.each(rows)("%s", (_name, status, payload, expected) => {
    expect(classifyGraphError(parseGraphError(status, payload))).toEqual(expected);
  });
  it("keeps the code and Meta's message for the timeline", () => {
    expect(parseGraphError(400, body(131026))).toMatchObject({ code: 131026, title: "(#131026) something" });
  });
});
