// Runs around every test file. A backend written from the guide retries a callback answered 5xx or 429,
// so such an answer would pass unseen: every test fails on one it did not expect.
import { afterEach, expect } from "vitest";
import { ToolBackend } from "./tool-backend.js";

afterEach(() => {
  for (const backend of ToolBackend.started) {
    expect(backend.takeServerErrors(), "callbacks answered 5xx or 429 (the backend's retries hid them)").toEqual([]);
  }
});
