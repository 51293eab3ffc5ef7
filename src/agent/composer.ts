// The built-in composer: answers turns when no AGENT_URL is set, so the hub is useful on its own.
// One reply per turn, so a result that arrives while the person's message waits is in that same reply.
import type { AgentPort, TurnInput, TurnReply, TurnRequest } from "./agent-port.js";
import { renderData } from "./render-data.js";
import { MAX_ATTACHMENTS } from "../conversations/attachments.js";

export interface ComposerOptions {
  /** Starts the demo tool for this conversation and returns what to tell the person; absent without the demo. */
  startDemo?: (conversationId: string, text: string) => Promise<string>;
}

const DEMO_PHRASE = /\b(demo|search|find|look(ing)? for)\b/i;
const STATUS_QUESTION = /\b(how('s| is)? it going|status|progress|ready yet|any news)\b/i;

function sentenceFor(input: TurnInput): string | undefined {
  switch (input.type) {
    case "tool_result": {
      const result = (input.result ?? {}) as { message?: string; data?: unknown };
      const data = result.data === undefined ? "" : renderData(result.data);
      return [result.message ?? `${input.tool} is done.`, data].filter(Boolean).join("\n");
    }
    case "tool_failed":
      if (input.reason === "timeout") return `Sorry, ${input.tool} could not be done this time: it took too long.`;
      if (input.reason === "cancelled") return `${input.tool} was called off.`;
      return `Sorry, ${input.tool} could not be completed: ${input.message}`;
    case "tool_expired":
      return `The ${input.tool} ${input.outcome === "failed" ? "failure notice" : "result"} from ${input.arrivedAt.slice(0, 16).replace("T", " ")} UTC is out of date now, so I have not passed it on. Shall I run it again?`;
    case "progress":
      return `Still on it: ${input.text}`;
    default:
      return undefined;
  }
}

export function builtInComposer(options: ComposerOptions = {}): AgentPort {
  return {
    remote: false,
    async runTurn(request: TurnRequest): Promise<TurnReply> {
      const parts: string[] = [];
      // The files of the results this reply gives go with it (as many as a message carries).
      const attachments = request.inputs
        .flatMap((input) => (input.type === "tool_result" ? (input.attachments ?? []) : []))
        .slice(0, MAX_ATTACHMENTS);
      for (const input of request.inputs) {
        if (input.type === "user_message") {
          parts.push(await answerUser(request, input.text, options));
        } else if (input.type === "handback") {
          if (request.inputs.length === 1) parts.push("I'm back with you. How can I help?");
        } else {
          const sentence = sentenceFor(input);
          if (sentence) parts.push(sentence);
        }
      }
      if (parts.length === 0) return { messages: [] };
      return { messages: [{ text: parts.join("\n\n"), ...(attachments.length ? { attachments } : {}) }] };
    },
  };
}

async function answerUser(request: TurnRequest, text: string, options: ComposerOptions): Promise<string> {
  // "How is the search going?" asks about the running one; it starts nothing.
  const running = request.runningJobs[0];
  if (running && STATUS_QUESTION.test(text)) {
    return running.lastProgress ? `Still on it: ${running.lastProgress}` : `Still working on ${running.tool}.`;
  }
  if (options.startDemo && DEMO_PHRASE.test(text)) return options.startDemo(request.conversation.id, text);
  if (options.startDemo) {
    return 'I\'m the hub\'s built-in agent. Ask me to search the demo catalogue ("search for anxiety", or just "run the demo") and I\'ll start a slow search; its result will arrive here when it is ready, even if you close this chat.';
  }
  return "Thanks, noted.";
}
