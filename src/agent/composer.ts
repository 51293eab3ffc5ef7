// The built-in composer: answers turns when no AGENT_URL or AGENT_MODEL is set, so the hub is useful on its own.
// It plays the conversation of the tool-backend guide by rules, in Spanish and English (intent.ts): a concern
// and a place start the search with them, "how's it going?" is answered from the last progress, a question
// about the result from the result, small talk briefly. It never names a tool: what the person reads is about
// their request. An answer to the person is a message of its own, so a result given after a hand-back is not
// joined to it; outcomes of jobs next to each other in a turn are one message; all of a turn's messages are one
// reply. Pure but for `startSearch`.
import type { AgentPort, TurnInput, TurnReply, TurnRequest } from "./agent-port.js";
import { renderData } from "./render-data.js";
import { MAX_ATTACHMENTS, type Attachment } from "../conversations/attachments.js";
import { langOf, readIntent, type Lang } from "./intent.js";
import { answerAboutResult, lastResult } from "./result-answers.js";

export interface SearchArguments {
  query: string;
  place?: string;
}

export interface ComposerOptions {
  /** Starts the demo search for this conversation and returns what to tell the person; absent without the demo. */
  startSearch?: (conversationId: string, args: SearchArguments) => Promise<string>;
}

const say = (lang: Lang, en: string, es: string) => (lang === "es" ? es : en);

/** What the composer says about a job's outcome or progress; never the tool's name. */
export function sentenceFor(input: TurnInput): string | undefined {
  switch (input.type) {
    case "tool_result": {
      const result = (input.result ?? {}) as { message?: string; data?: unknown };
      const data = result.data === undefined ? "" : renderData(result.data);
      return [result.message ?? "It's done.", data].filter(Boolean).join("\n");
    }
    case "tool_failed":
      if (input.reason === "timeout") return "Sorry, I could not get that done this time: it took too long.";
      if (input.reason === "cancelled") return "That was called off.";
      return `Sorry, that could not be completed: ${input.message}`;
    case "tool_expired":
      return `The ${input.outcome === "failed" ? "failure notice" : "result"} from ${input.arrivedAt.slice(0, 16).replace("T", " ")} UTC is out of date now, so I have not passed it on. Shall I try again?`;
    case "progress":
      return `Still on it: ${input.text}`;
    default:
      return undefined;
  }
}

export function builtInComposer(options: ComposerOptions = {}): AgentPort {
  return {
    remote: false,
    // The person's questions about a result are answered from the result in the conversation.
    wantsHistory: "person",
    async runTurn(request: TurnRequest): Promise<TurnReply> {
      const messages: TurnReply["messages"] = [];
      const add = (text: string, attachments?: Attachment[]) => {
        // The same words twice in a row (a notify-progress and "how's it going?" answered from it) say it once.
        if (messages.at(-1)?.text === text) return;
        messages.push({ text, ...(attachments?.length ? { attachments } : {}) });
      };
      // Results (failures, progress) next to each other in the turn are said in one message: each message is a
      // delivery of its own (routed, emitted, acknowledged), and under a backlog a turn takes many results at
      // once — one message each made a result's delivery cost about three times as much as it had.
      let outcomes: { texts: string[]; files: Attachment[] } | undefined;
      const sayOutcomes = () => {
        if (outcomes) add(outcomes.texts.join("\n\n"), outcomes.files);
        outcomes = undefined;
      };
      let room = MAX_ATTACHMENTS;
      for (const input of request.inputs) {
        if (input.type === "user_message") {
          sayOutcomes();
          add(await answerUser(request, input.text, options));
        } else if (input.type === "handback") {
          sayOutcomes();
          if (request.inputs.length === 1) add("I'm back with you. How can I help?");
        } else {
          const sentence = sentenceFor(input);
          if (!sentence) continue;
          // The files of the result go with the message that gives it (as many as a reply carries).
          const files = input.type === "tool_result" ? (input.attachments ?? []).slice(0, room) : [];
          room -= files.length;
          outcomes ??= { texts: [], files: [] };
          if (outcomes.texts.at(-1) !== sentence) outcomes.texts.push(sentence);
          outcomes.files.push(...files);
        }
      }
      sayOutcomes();
      return { messages };
    },
  };
}

/** The answer to what the person wrote. */
export async function answerUser(request: TurnRequest, text: string, options: ComposerOptions): Promise<string> {
  const lang = langOf(text);
  const result = lastResult(request.history);
  const intent = readIntent(text, { hasResult: result !== undefined });
  const running = request.runningJobs[0];
  switch (intent.kind) {
    case "status":
      // Every turn knows which jobs run: asking starts nothing.
      if (running)
        return running.lastProgress
          ? say(lang, `Still on it: ${running.lastProgress}.`, `Sigo en eso: ${running.lastProgress}.`)
          : say(
              lang,
              "Still on it; I'll write here as soon as I have it.",
              "Sigo en eso; te escribo aquí apenas lo tenga.",
            );
      if (result) return say(lang, "It's done: the results are just above.", "Ya está: los resultados están arriba.");
      return say(lang, "Nothing is running right now.", "No hay nada en curso ahora.");
    case "about_result":
      return answerAboutResult({ text, aspect: intent.aspect, ordinal: intent.ordinal }, result!, lang);
    case "search":
      if (running && options.startSearch)
        return say(
          lang,
          "I'm already on a search; I'll write here as soon as it's done.",
          "Ya estoy buscando; te escribo aquí apenas termine.",
        );
      if (options.startSearch)
        return options.startSearch(request.conversation.id, {
          query: intent.query,
          ...(intent.place ? { place: intent.place } : {}),
        });
      return "Thanks, noted.";
    case "thanks":
      return say(lang, "You're welcome!", "¡De nada!");
    case "bye":
      return say(lang, "Take care! I'm here if you need anything.", "¡Cuídate! Aquí estoy si necesitas algo.");
    case "greeting":
      return say(lang, "Hi! How can I help?", "¡Hola! ¿En qué te puedo ayudar?");
    case "about":
    case "other":
      if (options.startSearch)
        return say(
          lang,
          "I'm the hub's built-in agent. Tell me what you're going through and where you live (\"I've been having a lot of anxiety lately, I live in Ñuñoa\"), or just say \"run the demo\", and I'll start a slow search of the demo catalogue; its result arrives here when it is ready, even if you close this chat.",
          'Soy el agente integrado del hub. Cuéntame qué te pasa y dónde vives ("tengo mucha ansiedad, vivo en Ñuñoa"), o di "run the demo", y empiezo una búsqueda lenta en el catálogo de demostración; el resultado llega aquí cuando esté listo, aunque cierres este chat.',
        );
      return "Thanks, noted.";
  }
}
