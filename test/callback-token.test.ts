import { describe, expect, it } from "vitest";
import { createCallbackToken, verifyCallbackToken } from "../src/jobs/callback-token.js";

const jobId = "3b0e8a4c-0000-4000-8000-00000000abcd";
const now = new Date("2026-01-01T00:00:00Z");
const later = new Date("2026-01-02T00:00:00Z");

describe("callback tokens", () => {
  it("name the job they were made for until they expire", () => {
    const token = createCallbackToken("s1", jobId, later);
    expect(verifyCallbackToken("s1", token, now)).toEqual({ jobId, tool: undefined });
    const withTool = createCallbackToken("s1", jobId, later, "match_therapists");
    expect(verifyCallbackToken("s1", withTool, now)).toEqual({ jobId, tool: "match_therapists" });
    expect(verifyCallbackToken("s1", token, later)).toBeUndefined();
  });
  it("are refused when signed with another secret, altered, or malformed", () => {
    const token = createCallbackToken("s1", jobId, later);
    expect(verifyCallbackToken("s2", token, now)).toBeUndefined();
    const [payload, signature] = token.split(".") as [string, string];
    const otherJob = Buffer.from(`${jobId.replace("abcd", "abce")}.${Math.floor(later.getTime() / 1000)}`).toString(
      "base64url",
    );
    expect(verifyCallbackToken("s1", `${otherJob}.${signature}`, now)).toBeUndefined();
    const longer = Buffer.from(`${jobId}.${Math.floor(later.getTime() / 1000) + 86400}`).toString("base64url");
    expect(verifyCallbackToken("s1", `${longer}.${signature}`, now)).toBeUndefined();
    expect(verifyCallbackToken("s1", payload, now)).toBeUndefined();
    expect(verifyCallbackToken("s1", `${token}.x`, now)).toBeUndefined();
  });
});
