// Media tokens (src/media/media-token.ts): they name one file of one message until their expiry, and nothing
// else passes for one — a changed character, another secret, a callback token signed with the same secret.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createCallbackToken } from "../src/jobs/callback-token.js";
import { createMediaToken, verifyMediaToken } from "../src/media/media-token.js";

const SECRET = "media-secret-for-tests";
const NOW = new Date("2026-12-01T12:00:00Z");
const LATER = new Date(NOW.getTime() + 3_600_000);

describe("media tokens", () => {
  const claim = { messageId: randomUUID(), index: 2 };
  const token = createMediaToken(SECRET, claim, LATER);

  it("name their message and file until they expire", () => {
    expect(verifyMediaToken(SECRET, token, NOW)).toEqual(claim);
    expect(verifyMediaToken(SECRET, token, new Date(LATER.getTime() - 1000))).toEqual(claim);
    expect(verifyMediaToken(SECRET, token, LATER)).toBeUndefined();
  });

  it("refuse every one-character change, another secret, and a callback token", () => {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
    for (let i = 0; i < token.length; i++) {
      const other = alphabet[(alphabet.indexOf(token[i]!) + 1) % alphabet.length]!;
      const changed = token.slice(0, i) + other + token.slice(i + 1);
      expect(verifyMediaToken(SECRET, changed, NOW), `changed at ${i}`).toBeUndefined();
    }
    expect(verifyMediaToken("another-secret", token, NOW)).toBeUndefined();
    expect(verifyMediaToken(SECRET, createCallbackToken(SECRET, claim.messageId, LATER), NOW)).toBeUndefined();
    expect(verifyMediaToken(SECRET, "", NOW)).toBeUndefined();
    expect(verifyMediaToken(SECRET, `${token}.x`, NOW)).toBeUndefined();
  });

  it("name a stored file by its upload, a kind that never passes for a message's file", () => {
    const upload = { uploadId: randomUUID() };
    const uploadToken = createMediaToken(SECRET, upload, LATER);
    expect(verifyMediaToken(SECRET, uploadToken, NOW)).toEqual(upload);
    expect(verifyMediaToken(SECRET, uploadToken, LATER)).toBeUndefined();
    expect(verifyMediaToken("another-secret", uploadToken, NOW)).toBeUndefined();
    // The same id as a message's file: another payload, another signature.
    const asMessage = createMediaToken(SECRET, { messageId: upload.uploadId, index: 0 }, LATER);
    expect(verifyMediaToken(SECRET, asMessage, NOW)).toEqual({ messageId: upload.uploadId, index: 0 });
    expect(asMessage.split(".")[1]).not.toBe(uploadToken.split(".")[1]);
  });
});
