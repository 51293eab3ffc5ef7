// E-mail as a channel, with real SMTP both ways: people write to the hub's own SMTP listener (nodemailer as
// their mail client) and the hub sends through a real SMTP server (aiosmtpd, Debian's python3-aiosmtpd) that
// requires its login. The guide's conversation by e-mail (a slow tool's late result answered once, in the
// person's thread), quoted text kept from the agent, numbered choices answered by number, a take-over holding
// the result, files both ways, the relay down and back, a 5xx refusal, and an automatic reply recorded.
import { randomUUID } from "node:crypto";
import { createTransport, type Transporter } from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnInput } from "../src/agent/agent-port.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { eventually } from "./support/services.js";
import { PYTHON, SmtpCapture } from "./support/smtp-capture.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { execFileSync } from "node:child_process";

const HUB_ADDRESS = "support@clinic.test";
const RELAY_USER = "hub-relay";
const RELAY_PASSWORD = "relay pass:word";

const hasAiosmtpd = (() => {
  try {
    execFileSync(PYTHON, ["-c", "import aiosmtpd"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

if (!hasAiosmtpd)
  console.warn("test/email.test.ts skipped: /usr/bin/python3 has no aiosmtpd (apt-get install python3-aiosmtpd)");

describe.skipIf(!hasAiosmtpd)("e-mail", () => {
  let relay: SmtpCapture;
  let backend: ToolBackend;
  let agent: AgentRuntime;
  let hub: TestHub;
  let mailClient: Transporter;

  beforeAll(async () => {
    relay = await new SmtpCapture(RELAY_USER, RELAY_PASSWORD).start();
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: {
        AGENT_URL: agent.url,
        AGENT_SECRET,
        TURN_RETRY_BASE_MS: "200",
        SMTP_URL: `smtp://${RELAY_USER}:${encodeURIComponent(RELAY_PASSWORD)}@127.0.0.1:${relay.port}`,
        EMAIL_FROM: `"Clinic Support" <${HUB_ADDRESS}>`,
        EMAIL_SMTP_HOST: "127.0.0.1",
        EMAIL_SMTP_PORT: "0",
        EMAIL_MAX_BYTES: String(512 * 1024),
      },
    });
    mailClient = createTransport({ host: "127.0.0.1", port: hub.hub.smtpPort!, secure: false, ignoreTLS: true });
  });
  afterAll(async () => {
    mailClient?.close();
    await hub?.stop();
    await agent?.stop();
    await backend?.stop();
    await relay?.close();
  });

  const asConsole = (method: string, route: string, body?: unknown) => hub.api(method, route, body, CONSOLE_API_KEY);
  const conversationOf = (contact: string) =>
    eventually(
      () => hub.db.conversation.findFirst({ where: { channel: "email", account: HUB_ADDRESS, contact } }),
      `the conversation of ${contact}`,
    );
  const userInputs = (conversationId: string) =>
    agent
      .turnsOf(conversationId)
      .flatMap((turn) => turn.inputs)
      .filter((input): input is Extract<TurnInput, { type: "user_message" }> => input.type === "user_message");
  const mailsTo = async (address: string) => (await relay.mails()).filter((mail) => mail.envelopeTo.includes(address));
  /** Waits for the hub's e-mail to `address` whose text contains `words`; exactly one such must arrive. */
  const mailSaying = (address: string, words: string) =>
    eventually(async () => (await mailsTo(address)).find((mail) => mail.text?.includes(words)), `an e-mail: ${words}`);

  it("plays the guide's conversation by e-mail: the late result is one reply in the person's thread", async () => {
    const ana = "ana@example.org";
    const first = await mailClient.sendMail({
      from: `"Ana Rojas" <${ana}>`,
      to: HUB_ADDRESS,
      subject: "Looking for a therapist",
      text: "I've been feeling anxious lately. I live in Providencia.",
    });
    expect(first.accepted).toEqual([HUB_ADDRESS]);
    const conversation = await conversationOf(ana);
    expect(conversation.name).toBe("Ana Rojas");
    // The subject of a new thread says what it is about: the agent reads it with the words.
    await eventually(() => userInputs(conversation.id).length === 1, "the agent's turn");
    expect(userInputs(conversation.id)[0]!.text).toBe(
      "Looking for a therapist\n\nI've been feeling anxious lately. I live in Providencia.",
    );
    // The agent starts the slow search (as its runtime does, through the hub's API).
    const call = await hub.api("POST", `/v1/conversations/${conversation.id}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "anxiety", area: "Providencia" },
    });
    expect(call.status).toBe(202);
    const answer = await mailSaying(ana, "you said: Looking for a therapist");
    expect(answer.inReplyTo).toBe(first.messageId);
    expect(answer.subject).toBe("Re: Looking for a therapist");
    expect(answer.from?.value[0]).toMatchObject({ address: HUB_ADDRESS, name: "Clinic Support" });
    expect(answer.html).toContain("<p>you said: Looking for a therapist");

    // The result arrives later, twice (the backend's at-least-once retry): one e-mail, in the same thread.
    expect((await backend.post(call.body.job.id, { result: "ok", message: "2 therapists found" })).status).toBe(200);
    expect((await backend.post(call.body.job.id, { result: "ok", message: "2 therapists found" })).body).toEqual({
      ok: true,
      duplicate: true,
    });
    const result = await mailSaying(ana, "result: 2 therapists found");
    expect(result.inReplyTo).toBe(first.messageId);
    expect(result.references).toContain(first.messageId);
    expect(result.subject).toBe("Re: Looking for a therapist");
    await hub.settled();
    expect((await mailsTo(ana)).filter((mail) => mail.text?.includes("2 therapists found"))).toHaveLength(1);
    // Each e-mail's Message-ID is the message's externalId; the decision says why it went.
    const sent = await hub.db.message.findFirst({
      where: { conversationId: conversation.id, text: { contains: "result:" } },
    });
    expect(sent).toMatchObject({
      status: "sent",
      decision: "sent",
      statusReason: "no_window",
      externalId: result.messageId,
    });
    // The relay got the hub's login; the start-up line names the relay but never its password.
    const started = hub.logs.find((line) => line.includes('"hub started"'))!;
    expect(started).toContain(`from ${HUB_ADDRESS} via smtp://${RELAY_USER}@127.0.0.1:${relay.port}`);
    expect(hub.logs.join("")).not.toContain("pass:word");

    // Ana replies to the result from her mail client, which quotes it: the agent reads only her new words.
    const reply = await mailClient.sendMail({
      from: ana,
      to: HUB_ADDRESS,
      subject: "Re: Looking for a therapist",
      inReplyTo: result.messageId,
      references: [first.messageId, result.messageId!],
      text: `Thanks! Do they see people on Saturdays?\n\nOn Tue, 1 Dec 2026 at 10:00, Clinic Support <${HUB_ADDRESS}> wrote:\n> result: 2 therapists found\n> Reply to this e-mail.`,
    });
    await eventually(() => userInputs(conversation.id).length === 2, "the reply's turn");
    expect(userInputs(conversation.id)[1]!.text).toBe("Thanks! Do they see people on Saturdays?");
    const stored = await hub.db.message.findFirst({ where: { externalId: reply.messageId } });
    expect(stored).toMatchObject({ conversationId: conversation.id, role: "user" });
    expect((stored!.data as { fullText: string }).fullText).toContain("> result: 2 therapists found");
    const third = await mailSaying(ana, "you said: Thanks!");
    expect(third.inReplyTo).toBe(reply.messageId);
    expect(third.references).toEqual([first.messageId, result.messageId, reply.messageId]);
  });

  it("takes each e-mail once, for the hub's domain only, and never an automatic reply as the person's words", async () => {
    const ben = "ben@example.org";
    const messageId = `<${randomUUID()}@example.org>`;
    for (let i = 0; i < 2; i++)
      await mailClient.sendMail({ from: ben, to: HUB_ADDRESS, subject: "Hello", text: "Is anyone there?", messageId });
    const conversation = await conversationOf(ben);
    await mailSaying(ben, "you said: Hello");
    await hub.settled();
    expect(await hub.db.message.count({ where: { conversationId: conversation.id, role: "user" } })).toBe(1);
    expect(agent.turnsOf(conversation.id)).toHaveLength(1);

    // Not the hub's domain: refused at RCPT, nothing stored.
    await expect(
      mailClient.sendMail({ from: ben, to: "someone@elsewhere.test", subject: "relay?", text: "x" }),
    ).rejects.toMatchObject({ responseCode: 550 });

    // An out-of-office answer to the hub's e-mail: in the timeline, never a turn.
    const auto = await mailClient.sendMail({
      from: ben,
      to: HUB_ADDRESS,
      subject: "Automatic reply: Re: Hello",
      text: "I am out of the office until Monday.",
      headers: { "Auto-Submitted": "auto-replied" },
    });
    const recorded = await eventually(
      () => hub.db.message.findFirst({ where: { externalId: auto.messageId } }),
      "the automatic reply recorded",
    );
    expect(recorded).toMatchObject({ conversationId: conversation.id, role: "event", statusReason: "auto_reply" });
    await hub.settled();
    expect(agent.turnsOf(conversation.id)).toHaveLength(1);
    expect(userInputs(conversation.id).map((input) => input.text)).not.toContain(
      "I am out of the office until Monday.",
    );

    // A bounce about the hub's answer to Ben: that message is failed with the report's code, recorded, no turn.
    const answer = (await mailsTo(ben)).find((mail) => mail.text?.includes("you said: Hello"))!;
    const boundary = "report-boundary";
    await mailClient.sendMail({
      envelope: { from: "", to: [HUB_ADDRESS] },
      raw: [
        "From: Mail Delivery System <MAILER-DAEMON@mx.example.org>",
        `To: ${HUB_ADDRESS}`,
        "Subject: Undelivered Mail Returned to Sender",
        `Message-ID: <${randomUUID()}@mx.example.org>`,
        "MIME-Version: 1.0",
        `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
        "",
        `--${boundary}`,
        "Content-Type: text/plain",
        "",
        "Your message could not be delivered.",
        `--${boundary}`,
        "Content-Type: message/delivery-status",
        "",
        "Reporting-MTA: dns; mx.example.org",
        "",
        `Final-Recipient: rfc822; ${ben}`,
        "Action: failed",
        "Status: 5.1.1",
        "Diagnostic-Code: smtp; 550 5.1.1 user unknown",
        `--${boundary}`,
        "Content-Type: text/rfc822-headers",
        "",
        `From: ${HUB_ADDRESS}`,
        `To: ${ben}`,
        `Message-ID: ${answer.messageId}`,
        `--${boundary}--`,
        "",
      ].join("\r\n"),
    });
    const bounced = await eventually(
      () => hub.db.message.findFirst({ where: { externalId: answer.messageId, status: "failed" } }),
      "the bounced e-mail failed",
    );
    expect(bounced!.statusReason).toBe("550 5.1.1 user unknown");
    await eventually(
      () =>
        hub.db.message.findFirst({ where: { conversationId: conversation.id, role: "event", statusReason: "bounce" } }),
      "the bounce recorded",
    );
    await hub.settled();
    expect(agent.turnsOf(conversation.id)).toHaveLength(1);
  });

  it("offers choices as numbered lines, answered by replying with the number", async () => {
    const cora = "cora@example.org";
    agent.respond = (request) =>
      request.conversation.contact === cora && request.inputs.some((i) => i.type === "user_message" && !i.payload)
        ? {
            messages: [
              {
                text: "Which one should I book?",
                buttons: [
                  { title: "Dr. Rojas, Monday", payload: "book_rojas" },
                  { title: "Dr. Soto, Saturday", payload: "book_soto" },
                ],
              },
            ],
          }
        : undefined;
    try {
      await mailClient.sendMail({ from: cora, to: HUB_ADDRESS, subject: "Booking", text: "I'd like to book." });
      const offer = await mailSaying(cora, "Which one should I book?");
      expect(offer.text).toContain(
        "Reply with the number or the words of your choice:\n1. Dr. Rojas, Monday\n2. Dr. Soto, Saturday",
      );
      expect(offer.html).toContain("<ol><li>Dr. Rojas, Monday</li><li>Dr. Soto, Saturday</li></ol>");
      const conversation = await conversationOf(cora);
      await mailClient.sendMail({
        from: cora,
        to: HUB_ADDRESS,
        subject: "Re: Booking",
        inReplyTo: offer.messageId,
        text: `2\n\nOn Wed, Clinic Support wrote:\n> Which one should I book?`,
      });
      await eventually(() => userInputs(conversation.id).some((input) => input.payload === "book_soto"), "the choice");
    } finally {
      agent.respond = undefined;
    }
  });

  it("holds a late result while a human has the conversation, then sends it in the thread that asked for it", async () => {
    const dan = "dan@example.org";
    const first = await mailClient.sendMail({ from: dan, to: HUB_ADDRESS, subject: "Sleep", text: "I can't sleep." });
    const conversation = await conversationOf(dan);
    await mailSaying(dan, "you said: Sleep");
    const call = await hub.api("POST", `/v1/conversations/${conversation.id}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "insomnia", area: "Ñuñoa" },
    });
    // Dan starts another thread while the search runs: answered there; the result will go to the first.
    const second = await mailClient.sendMail({
      from: dan,
      to: HUB_ADDRESS,
      subject: "Insurance",
      text: "Do you take my insurance?",
    });
    const there = await mailSaying(dan, "you said: Insurance");
    expect(there.inReplyTo).toBe(second.messageId);
    expect(there.subject).toBe("Re: Insurance");
    expect(
      (await asConsole("POST", `/v1/conversations/${conversation.id}/takeover`, { agent: { id: "h1", name: "Marta" } }))
        .status,
    ).toBe(200);
    await backend.post(call.body.job.id, { result: "ok", message: "1 sleep specialist" });
    await eventually(
      () =>
        hub.db.message.findFirst({ where: { conversationId: conversation.id, role: "tool_result", status: "held" } }),
      "the result held",
    );
    await hub.settled();
    expect((await mailsTo(dan)).some((mail) => mail.text?.includes("1 sleep specialist"))).toBe(false);
    expect((await asConsole("POST", `/v1/conversations/${conversation.id}/handback`)).status).toBe(200);
    const result = await mailSaying(dan, "result: 1 sleep specialist");
    expect(result.inReplyTo).toBe(first.messageId);
    expect(result.subject).toBe("Re: Sleep");
    await hub.settled();
    expect((await mailsTo(dan)).filter((mail) => mail.text?.includes("1 sleep specialist"))).toHaveLength(1);
  });

  it("takes a person's file to the agent and attaches the hub's own files to its e-mail", async () => {
    const eva = "eva@example.org";
    const pdf = Buffer.from("%PDF-1.4\n% a referral letter\n%%EOF\n");
    await mailClient.sendMail({
      from: eva,
      to: HUB_ADDRESS,
      subject: "My referral",
      text: "Here is the letter from my doctor.",
      attachments: [{ filename: "referral.pdf", content: pdf, contentType: "application/pdf" }],
    });
    const conversation = await conversationOf(eva);
    await eventually(() => userInputs(conversation.id).length === 1, "the file's turn");
    const [input] = userInputs(conversation.id);
    expect(input!.attachments).toEqual([
      {
        url: expect.stringContaining(`${hub.url}/media/`),
        mimeType: "application/pdf",
        name: "referral.pdf",
        size: pdf.length,
      },
    ]);
    const fetched = await fetch(input!.attachments![0]!.url);
    expect(Buffer.from(await fetched.arrayBuffer())).toEqual(pdf);

    // The agent answers with that file (the hub's own: attached) and another's link (linked in the text).
    const answered = await hub.api("POST", `/v1/conversations/${conversation.id}/messages`, {
      text: "Thank you, we have it. Our intake form is linked below.",
      attachments: [
        { url: input!.attachments![0]!.url, name: "referral.pdf", mimeType: "application/pdf" },
        { url: "https://forms.example.org/intake.pdf", name: "intake.pdf" },
      ],
    });
    expect(answered.status).toBeLessThan(300);
    const mail = await mailSaying(eva, "Thank you, we have it.");
    expect(mail.attachments.map((file) => [file.filename, file.contentType])).toEqual([
      ["referral.pdf", "application/pdf"],
    ]);
    expect(mail.attachments[0]!.content).toEqual(pdf);
    expect(mail.text).toContain("intake.pdf: https://forms.example.org/intake.pdf");
    expect(mail.inReplyTo).toBeTruthy();
  });

  it("retries while the relay is down and sends once when it is back; a 5xx refusal fails with its code", async () => {
    const finn = "finn@example.org";
    await mailClient.sendMail({ from: finn, to: HUB_ADDRESS, subject: "Hi", text: "Hello there." });
    const conversation = await conversationOf(finn);
    await mailSaying(finn, "you said: Hi");

    await relay.stop();
    const said = await hub.api("POST", `/v1/conversations/${conversation.id}/messages`, {
      text: "Your appointment is confirmed.",
    });
    expect(said.status).toBeLessThan(300);
    // Tried and deferred (connection refused), still owed.
    await eventually(async () => {
      const metrics = await (await fetch(`${hub.url}/metrics`)).text();
      return /hub_email_sends_total\{outcome="deferred",code="no_answer"\} [1-9]/.test(metrics);
    }, "a deferred send");
    expect(
      await hub.db.message.findFirst({
        where: { conversationId: conversation.id, text: "Your appointment is confirmed." },
      }),
    ).toMatchObject({
      status: "pending",
    });
    await relay.start();
    await mailSaying(finn, "Your appointment is confirmed.");
    await hub.settled();
    expect((await mailsTo(finn)).filter((mail) => mail.text?.includes("Your appointment is confirmed."))).toHaveLength(
      1,
    );

    relay.answerWith("550 5.1.1 <finn@example.org>: mailbox unavailable");
    try {
      await hub.api("POST", `/v1/conversations/${conversation.id}/messages`, { text: "A reminder for tomorrow." });
      const failed = await eventually(
        () =>
          hub.db.message.findFirst({
            where: { conversationId: conversation.id, text: "A reminder for tomorrow.", status: "failed" },
          }),
        "the refused send failed",
      );
      expect(failed!.statusReason).toBe("550 5.1.1 <finn@example.org>: mailbox unavailable");
    } finally {
      relay.accept();
    }
  });
});
