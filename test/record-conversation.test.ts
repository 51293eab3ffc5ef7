// The recorder on timelines made by hand, for what a live demo conversation does not show: a normal tool's
// answer put back as its backend's body (or not, when its respond cannot be undone), a cancel, the messages a
// test cannot play (before the person's first, a take-over's), and an id a result quoted.
import { describe, expect, it } from "vitest";
import type { ConversationTimeline } from "../src/console/console-queries.js";
import type { MessageView } from "../src/conversations/timeline.js";
import type { JobView } from "../src/jobs/job-view.js";
import { backendBody, recordConversation } from "../src/testing/record-conversation.js";
import { testFileSchema } from "../src/testing/test-file.js";

let seq = 0;
const at = () => new Date(Date.UTC(2026, 0, 1, 0, 0, seq++)).toISOString();
const message = (role: string, text: string | null, more: Partial<MessageView> = {}): MessageView => ({
  id: `m${seq}`,
  conversationId: "c1",
  role,
  text,
  data: null,
  jobId: null,
  toolCallId: null,
  status: role === "agent" ? "delivered" : null,
  decision: null,
  statusReason: null,
  createdAt: at(),
  ...more,
});
const timeline = (messages: MessageView[], jobs: JobView[] = []): ConversationTimeline => ({
  conversation: {
    id: "c1",
    channel: "web",
    contact: "anon-1",
    label: "Visitor c1",
  } as ConversationTimeline["conversation"],
  messages,
  held: [],
  jobs,
});

describe("recording a timeline", () => {
  it("a normal tool's answer is its backend's body, with respond undone; a respond that cannot be is said", () => {
    const respond = { available: "$.stock.count" };
    expect(backendBody(respond, { data: { available: 3 } })).toEqual({ stock: { count: 3 } });
    expect(backendBody({}, { message: "ok", data: { a: 1 } })).toEqual({ message: "ok", data: { a: 1 } });
    expect(backendBody({ first: "$.items[0]" }, { data: { first: 1 } })).toBeUndefined();

    const messages = [
      message("agent", "Welcome!"),
      message("user", "is A-1 in stock?"),
      message("tool_call", null, { data: { tool: "check_stock", arguments: { sku: "A-1" } } }),
      message("tool_result", null, { data: { outcome: "succeeded", result: { data: { available: 3 } } } }),
      message("agent", "Yes: 3 in stock."),
      message("human", "Hi, I'm Marta."),
    ];
    const recorded = recordConversation(timeline(messages), new Map([["check_stock", { respond }]]), "stock");
    expect(recorded.test.tools).toEqual({ check_stock: { answer: { stock: { count: 3 } } } });
    expect(recorded.test.steps).toEqual([
      {
        person: "is A-1 in stock?",
        expect: [{ tool: "check_stock", arguments: { sku: "A-1" } }, { reply: "Yes: 3 in stock." }],
      },
    ]);
    expect(recorded.fields.tools).toEqual(["tools.check_stock.answer"]);
    expect(recorded.notes).toEqual([
      "the messages of your team (a take-over) are not written: a step cannot play them yet",
      "1 message(s) sent before the person's first message are not written (no step makes them)",
    ]);
    expect(testFileSchema.safeParse({ tests: [recorded.test] }).success).toBe(true);

    const unknown = recordConversation(
      timeline(messages),
      new Map([["check_stock", { respond: { x: "$.a[0]" } }]]),
      "s",
    );
    expect(unknown.notes).toContain(
      "check_stock's answer could not be turned back into its backend's body (its respond): check it",
    );
  });

  it("a cancel is an expectation of the step it happened in, not a step", () => {
    const job = {
      id: "j1",
      tool: "match_therapists",
      message: "Looking",
      progress: [],
      approval: null,
    } as unknown as JobView;
    const recorded = recordConversation(
      timeline(
        [
          message("user", "find me a therapist"),
          message("tool_call", null, { jobId: "j1", data: { tool: "match_therapists", arguments: { reason: "x" } } }),
          message("agent", "On it."),
          message("user", "never mind"),
          message("tool_result", "The job was cancelled.", {
            jobId: "j1",
            status: "delivered",
            data: { outcome: "cancelled", reason: "cancelled" },
          }),
          message("agent", "Called off."),
        ],
        [job],
      ),
      new Map(),
      "cancel",
    );
    expect(recorded.test.tools).toEqual({ match_therapists: { accepted: "Looking" } });
    expect(recorded.test.steps[1]).toEqual({
      person: "never mind",
      expect: [{ cancelled: "match_therapists" }, { no_tool: true }, { reply: "Called off." }],
    });
    expect(JSON.stringify(recorded.test)).not.toContain("j1");
  });
});
