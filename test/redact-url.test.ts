// What an HTTP span may say of a URL (src/tracing/redact-url.ts): the hub's signed tokens in paths, and every
// query value, never; ids, versions and route words as they are.
import { describe, expect, it } from "vitest";
import { createCallbackToken } from "../src/jobs/callback-token.js";
import { createMediaToken } from "../src/media/media-token.js";
import { redactTarget, redactUrl } from "../src/tracing/redact-url.js";

const JOB = "0b6f9a2e-4c1d-4f7a-9f3e-2d8c1b7a6e55";
const callbackToken = createCallbackToken("secret", JOB, new Date(Date.now() + 60_000), "match_therapists");
const mediaToken = createMediaToken("secret", { messageId: JOB, index: 0 }, new Date(Date.now() + 60_000));

describe("URLs on spans", () => {
  it.each([
    [`/callbacks/${callbackToken}`, "/callbacks/REDACTED", undefined],
    [`/media/${mediaToken}`, "/media/REDACTED", undefined],
    [`/v1/conversations/${JOB}/jobs`, `/v1/conversations/${JOB}/jobs`, undefined],
    [
      "/socket.io/?EIO=4&transport=polling&token=eyJhbGciOi.x.y",
      "/socket.io/",
      "EIO=REDACTED&transport=REDACTED&token=REDACTED",
    ],
    ["/widget/sessions", "/widget/sessions", undefined],
    [
      "/webhooks/meta?hub.verify_token=verify-me&hub.challenge=1",
      "/webhooks/meta",
      "hub.verify_token=REDACTED&hub.challenge=REDACTED",
    ],
  ])("%s reads %s", (target, path, query) => {
    expect(redactTarget(target)).toEqual([path, query]);
  });

  it("keeps a full URL's host and route, never its user, password, key-like segments or query values", () => {
    expect(redactUrl("https://user:pw@graph.facebook.com/v21.0/1111111111/messages?access_token=EAAB123")).toBe(
      "https://graph.facebook.com/v21.0/1111111111/messages?access_token=REDACTED",
    );
    expect(redactUrl("https://api.example.com/keys/sk-live-4f9c2a7b1e3d5f60/items")).toBe(
      "https://api.example.com/keys/REDACTED/items",
    );
    expect(redactUrl("not a url")).toBe("REDACTED");
  });
});
