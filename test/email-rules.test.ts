// E-mail's pure rules, table by table: what a reply newly says once the quoted text is gone, what an SMTP
// answer means for a send, the settings the hub refuses, and the thread headers of a reply.
import { describe, expect, it } from "vitest";
import { emailConfig, parseEmailFrom, smtpLabel } from "../src/channels/email/email-config.js";
import { replyHeaders, replySubject } from "../src/channels/email/email-thread.js";
import { newText } from "../src/channels/email/quoted-text.js";
import { classifySmtpError } from "../src/channels/email/smtp-error.js";

describe("the new text of a reply", () => {
  it.each([
    [
      "Gmail",
      "Yes, Monday works.\n\nOn Tue, Dec 1, 2026 at 10:00 AM Clinic <s@c.test> wrote:\n> Does Monday work?",
      "Yes, Monday works.",
    ],
    [
      "Gmail, wrapped",
      "Yes.\n\nOn Tue, Dec 1, 2026 at 10:00 AM Clinic Support <\nsupport@c.test> wrote:\n> old",
      "Yes.",
    ],
    ["German", "Ja, gerne.\n\nAm 01.12.2026 um 10:00 schrieb Clinic <s@c.test>:\n> alt", "Ja, gerne."],
    ["Outlook", "Thanks.\n\n-----Original Message-----\nFrom: Clinic\nSent: Monday\nTo: me\n\nold", "Thanks."],
    [
      "Outlook headers",
      "Thanks.\n\nFrom: Clinic Support <s@c.test>\nSent: Monday, 1 December\nTo: Ana\nSubject: Re: x",
      "Thanks.",
    ],
    ["inline answers", "> Which day?\nMonday\n> Which time?\nNoon", "Monday\nNoon"],
    ["a signature", "See you then.\n-- \nAna Rojas\n+56 9 1234", "See you then."],
    ["only a quote", "> Does Monday work?", "> Does Monday work?"],
    ["no quote", "Hello,\n\nI need help.", "Hello,\n\nI need help."],
  ])("%s", (_client, full, expected) => {
    expect(newText(full)).toBe(expected);
  });
});

describe("an SMTP answer", () => {
  it.each([
    [
      { responseCode: 550, response: "550 5.1.1 mailbox unavailable" },
      { action: "fail", code: "550", title: "5.1.1 mailbox unavailable" },
    ],
    [
      { responseCode: 535, response: "535 5.7.8 bad credentials" },
      { action: "fail", code: "535", title: "5.7.8 bad credentials" },
    ],
    [
      { responseCode: 451, response: "451 4.7.1 greylisted" },
      { action: "retry", code: 451, title: "4.7.1 greylisted" },
    ],
    [
      { code: "ESOCKET", message: "connect ECONNREFUSED 127.0.0.1:25" },
      { action: "retry", code: null, title: "ESOCKET connect ECONNREFUSED 127.0.0.1:25" },
    ],
    [
      { code: "ETIMEDOUT", message: "Connection timeout" },
      { action: "retry", code: null, title: "ETIMEDOUT Connection timeout" },
    ],
  ])("%j", (error, verdict) => {
    expect(classifySmtpError(error)).toEqual(verdict);
  });
});

describe("the e-mail settings", () => {
  const base = { HOST: "0.0.0.0", EMAIL_MAX_BYTES: 1000 };
  it("is off with neither, and on with both", () => {
    expect(emailConfig(base)).toEqual({ email: undefined });
    expect(
      emailConfig({ ...base, SMTP_URL: "smtps://u:p@smtp.test:465", EMAIL_FROM: "Help <Help@Clinic.test>" }),
    ).toEqual({
      email: {
        smtpUrl: "smtps://u:p@smtp.test:465",
        from: { address: "help@clinic.test", name: "Help" },
        listen: undefined,
      },
    });
  });
  it.each([
    [{ SMTP_URL: "smtp://smtp.test" }, ["EMAIL_FROM: required with SMTP_URL"]],
    [{ EMAIL_FROM: "a@b.test" }, ["SMTP_URL: required with EMAIL_FROM"]],
    [{ SMTP_URL: "http://smtp.test", EMAIL_FROM: "a@b.test" }, ["SMTP_URL: expected smtp:// or smtps://"]],
    [{ SMTP_URL: "smtp://smtp.test", EMAIL_FROM: "not an address" }, ["EMAIL_FROM: expected an address"]],
    [{ EMAIL_SMTP_PORT: 2525 }, ["EMAIL_SMTP_PORT: set SMTP_URL and EMAIL_FROM too"]],
    [
      { SMTP_URL: "smtp://smtp.test", EMAIL_FROM: "a@b.test", EMAIL_SMTP_PORT: 2525, EMAIL_SMTP_TLS_KEY: "/k.pem" },
      ["EMAIL_SMTP_TLS_KEY, EMAIL_SMTP_TLS_CERT: set both"],
    ],
  ])("refuses %j", (env, problems) => {
    const found = emailConfig({ ...base, ...env });
    expect("problems" in found && found.problems.map((problem) => problem.slice(0, problems[0]!.length))).toEqual(
      problems,
    );
  });
  it("names the relay without its password", () => {
    expect(smtpLabel("smtp://hub%40x:s3cret@smtp.test:587")).toBe("smtp://hub@x@smtp.test:587");
    expect(parseEmailFrom('"Clinic, Support" <s@c.test>')).toEqual({ address: "s@c.test", name: "Clinic, Support" });
  });
});

describe("a reply's thread headers", () => {
  it("answers the person's e-mail, keeping the thread's first id and the latest ones", () => {
    const ids = Array.from({ length: 30 }, (_, i) => `<${i}@x>`);
    const headers = replyHeaders({ messageId: "<last@x>", references: ids, subject: "x" });
    expect(headers.inReplyTo).toBe("<last@x>");
    expect(headers.references).toHaveLength(20);
    expect(headers.references[0]).toBe("<0@x>");
    expect(headers.references.at(-1)).toBe("<last@x>");
    expect(replySubject("RE: Aw: Fwd: Booking", "Clinic")).toBe("Re: Booking");
    expect(replySubject("", "Clinic")).toBe("Re: Clinic");
  });
});
