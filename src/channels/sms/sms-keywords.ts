// The words Twilio's Advanced Opt-Out acts on, sent as the whole message (any case): the person opts out of
// this sender, back in, or asks for help. Twilio answers each itself and refuses sends to a person who opted
// out (21610); the hub records them and never runs the agent on them.
export type SmsKeyword = "opt_out" | "opt_in" | "help";

const KEYWORDS: Record<string, SmsKeyword> = {
  STOP: "opt_out",
  STOPALL: "opt_out",
  UNSUBSCRIBE: "opt_out",
  CANCEL: "opt_out",
  END: "opt_out",
  QUIT: "opt_out",
  START: "opt_in",
  UNSTOP: "opt_in",
  YES: "opt_in",
  HELP: "help",
  INFO: "help",
};

/** Twilio's own word on it (`OptOutType`, with Advanced Opt-Out), when it gives one. */
const OPT_OUT_TYPES: Record<string, SmsKeyword> = { STOP: "opt_out", START: "opt_in", HELP: "help" };

/** The keyword this message is, with the word as the hub names it; undefined for anything else. */
export function smsKeyword(
  body: string,
  optOutType: string | undefined,
): { keyword: SmsKeyword; word: string } | undefined {
  const word = body.trim().toUpperCase();
  const byTwilio = optOutType ? OPT_OUT_TYPES[optOutType.trim().toUpperCase()] : undefined;
  const keyword = byTwilio ?? KEYWORDS[word];
  if (!keyword) return undefined;
  // The person's own word when it is one of the list, else Twilio's (a custom keyword of the account).
  return { keyword, word: KEYWORDS[word] ? word : optOutType!.trim().toUpperCase() };
}

/** What the timeline says for each. */
export const KEYWORD_EVENT: Record<SmsKeyword, (word: string) => string> = {
  opt_out: (word) => `[the person sent ${word}: opted out of SMS from this number; nothing more is sent until START]`,
  opt_in: (word) => `[the person sent ${word}: opted back in to SMS from this number]`,
  help: (word) => `[the person sent ${word}: Twilio answered with the number's help text]`,
};
