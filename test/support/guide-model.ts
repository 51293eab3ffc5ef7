// A scripted model for the guide's conversation (docs/agent.md): it calls match_therapists for the opening
// line, says it is on it once the placeholder comes, answers "how's it going?" from the running call's progress
// in its instructions, gives the result when the hub's notice comes, answers a question about it from that notice,
// calls the search off when asked, and — for "book" — makes up a link. It decides only from what it is sent,
// like a real model, so what it says proves what the hub sent it.
import { hubNotices, type LlmRequest, type LlmScript } from "./fake-llm.js";

export const GUIDE = {
  opening: "I've been having a lot of anxiety lately, I live in Ñuñoa",
  onIt: "I'm looking for therapists who fit what you're going through, in Ñuñoa. It takes a couple of minutes, and I'll write here as soon as I have them.",
  progress: "I'm reviewing 12 therapists in your area.",
  status: "how's it going?",
  question: "does the second one do online sessions?",
  callOff: "never mind, please call the search off",
  calledOff: "Done: I've called the search off.",
  book: "can I book with Ana?",
  invented: "https://book.example.com/ana-rojas",
  askForPerson: "I'd rather talk to a person",
  stock: "is the SKU A-1 in stock?",
  vague: "find me someone for stress",
  askArea: "Which area do you live in?",
  handedOff: "I've asked a colleague to take over; they will write to you here.",
  back: "I'm back. Is there anything else I can help with?",
} as const;

export const THERAPISTS = {
  result: "ok",
  message: "2 therapists found",
  data: {
    therapists: [
      { name: "Ana Rojas", approach: "cognitive behavioural therapy", where: "Ñuñoa", days: "Tuesdays and Thursdays" },
      { name: "Pedro Soto", approach: "mindfulness", where: "online or in Providencia" },
    ],
  },
};

/** Every notice of a completed call the hub gave, across the whole request. */
export function completedNotices(request: LlmRequest): Record<string, unknown>[] {
  return hubNotices(request).filter((notice) => notice.status === "completed");
}

function therapistsIn(request: LlmRequest): { name: string; where?: string }[] {
  for (const notice of completedNotices(request)) {
    const therapists = (notice.result as typeof THERAPISTS | undefined)?.data?.therapists;
    if (therapists) return therapists;
  }
  return [];
}

export function guideModel(): LlmScript {
  return (request) => {
    const last = request.messages.at(-1);
    // The hub's notices: a result, progress, a hand-back, a reply to write again.
    const notices = last ? hubNotices(request, last) : [];
    if (notices.some((notice) => notice.status === "completed")) {
      const [first, second] = therapistsIn(request);
      return {
        text: `I have two for you. ${first?.name} treats anxiety with cognitive behavioural therapy and sees patients in Ñuñoa on Tuesdays and Thursdays. ${second?.name} works with mindfulness and sees patients ${second?.where}.`,
      };
    }
    if (notices.some((notice) => notice.event === "handed back")) return { text: GUIDE.back };
    if (notices.some((notice) => notice.event === "reply withheld"))
      return { text: `Of course: book with Ana at ${GUIDE.invented} whenever you like.` };
    const reported = notices.find((notice) => typeof notice.progress === "string");
    if (reported) return { text: `Still on it: ${String(reported.progress)}` };
    if (last?.role === "tool") {
      if (last.content.includes('"status":"running"')) return { text: GUIDE.onIt };
      if (last.content.includes('"cancelled"')) return { text: GUIDE.calledOff };
      if (last.content.includes('"handed_off"')) return { text: GUIDE.handedOff };
      if (last.content.includes("do not fit")) return { text: GUIDE.askArea };
      const stock = /"available":(\d+)/.exec(last.content);
      if (stock) return { text: `Yes: ${stock[1]} in stock.` };
      return { text: "Done." };
    }
    const text = last?.role === "user" ? last.text : "";
    if (text.includes(GUIDE.status)) {
      const progress = /last progress: "([^"]+)"/.exec(request.system)?.[1];
      return { text: progress ? `Still on it: ${progress}` : "Still on it." };
    }
    if (text.includes(GUIDE.question)) {
      const second = therapistsIn(request)[1];
      return {
        text: second?.where?.includes("online")
          ? `Yes, ${second.name.split(" ")[0]} sees patients online as well as in Providencia.`
          : "I don't know yet.",
      };
    }
    if (text.includes(GUIDE.callOff)) {
      const callId = /tool_call_id (\S+) \(match_therapists\)/.exec(request.system)?.[1];
      return callId
        ? { toolCalls: [{ name: "cancel-tool-call", args: { tool_call_id: callId } }] }
        : { text: "Nothing is running." };
    }
    if (text.includes(GUIDE.book)) return { text: `Of course: book with Ana at ${GUIDE.invented} whenever you like.` };
    if (text.includes(GUIDE.stock)) return { toolCalls: [{ name: "check_stock", args: { sku: "A-1" } }] };
    if (text.includes(GUIDE.vague)) return { toolCalls: [{ name: "match_therapists", args: { reason: "stress" } }] };
    if (text.includes(GUIDE.askForPerson))
      return { toolCalls: [{ name: "hand-off-to-human", args: { reason: "The person asked to talk to a person" } }] };
    if (text.includes(GUIDE.opening))
      return { toolCalls: [{ name: "match_therapists", args: { reason: "anxiety", area: "Ñuñoa" } }] };
    return { text: "How can I help?" };
  };
}
