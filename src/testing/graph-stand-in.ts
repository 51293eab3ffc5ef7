// Meta's Graph API as a WhatsApp conversation test's hub sees it: `POST /{version}/{phone-number-id}/messages`
// served on 127.0.0.1, so the hub's own send path (its window check, its template, its error handling) runs
// unchanged and nothing reaches Meta. It answers as the Cloud API does for what a test sends (text and
// templates), and refuses what Meta refuses: a wrong token (190), a free-form message more than 24 hours after
// the person's last message by the test's clock (131047), anything but text or a template (the stand-in
// takes no files or buttons). It cannot know the account's approved templates: any name is taken.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the stand-in accepted, in order. */
export interface GraphSend {
  to: string;
  type: "text" | "template";
  /** The text, or the template's name. */
  text: string;
  at: Date;
}

export interface GraphStandIn {
  /** The base URL to give the hub as GRAPH_API_URL. */
  url: string;
  phoneNumberId: string;
  accessToken: string;
  sends: GraphSend[];
  /** The person wrote at that time: the 24-hour window opens again. */
  personWrote(contact: string, at: Date): void;
  stop(): Promise<void>;
}

const WINDOW_MS = 24 * 3_600_000;
const MAX_TEXT = 4096;

/** A Graph error as Meta words it: `{error: {message: "(#code) title", type, code, error_data, fbtrace_id}}`. */
function graphError(code: number, title: string, details: string, type = "OAuthException") {
  return {
    error: {
      message: `(#${code}) ${title}`,
      type,
      code,
      error_data: { messaging_product: "whatsapp", details },
      fbtrace_id: randomUUID().replace(/-/g, "").slice(0, 23),
    },
  };
}

class Refused extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super("refused");
  }
}

const invalid = (details: string) => new Refused(400, graphError(100, "Invalid parameter", details));

export async function startGraphStandIn(now: () => Date): Promise<GraphStandIn> {
  const phoneNumberId = `1${String(Date.now()).slice(-14)}`;
  const accessToken = `conversation-test-${randomUUID()}`;
  const sends: GraphSend[] = [];
  const lastInbound = new Map<string, number>();

  function send(path: string, authorization: string | undefined, raw: string): unknown {
    if (authorization !== `Bearer ${accessToken}`)
      throw new Refused(401, {
        error: {
          message: "Invalid OAuth access token - Cannot parse access token",
          type: "OAuthException",
          code: 190,
          fbtrace_id: randomUUID().replace(/-/g, "").slice(0, 23),
        },
      });
    const match = /^\/v\d+\.\d+\/([^/]+)\/messages$/.exec(path);
    if (!match || match[1] !== phoneNumberId)
      throw new Refused(400, graphError(100, "Unsupported post request", `Unsupported post request: ${path}`));
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      throw invalid("The request body is not valid JSON.");
    }
    if (body.messaging_product !== "whatsapp") throw invalid("The parameter messaging_product is required.");
    const to = typeof body.to === "string" ? body.to : typeof body.recipient === "string" ? body.recipient : "";
    if (!to) throw invalid("The parameter to is required.");
    let sent: Omit<GraphSend, "at">;
    if (body.type === "text") {
      const text = (body.text as { body?: unknown } | undefined)?.body;
      if (typeof text !== "string" || text.trim() === "") throw invalid("The parameter text['body'] is required.");
      if (Array.from(text).length > MAX_TEXT)
        throw invalid(`Param text['body'] must be at most ${MAX_TEXT} characters long.`);
      sent = { to, type: "text", text };
    } else if (body.type === "template") {
      const template = body.template as { name?: unknown; language?: { code?: unknown } } | undefined;
      if (typeof template?.name !== "string" || template.name === "")
        throw invalid("The parameter template['name'] is required.");
      if (typeof template.language?.code !== "string")
        throw invalid("The parameter template['language']['code'] is required.");
      sent = { to, type: "template", text: template.name };
    } else {
      throw invalid(
        `Message type ${String(body.type)} is not taken by the conversation-test stand-in (text and templates only).`,
      );
    }
    const at = now();
    const last = lastInbound.get(to);
    if (sent.type === "text" && (last === undefined || at.getTime() - last >= WINDOW_MS))
      throw new Refused(
        400,
        graphError(
          131047,
          "Re-engagement message",
          "Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
        ),
      );
    sends.push({ ...sent, at });
    return {
      messaging_product: "whatsapp",
      contacts: [{ input: to, wa_id: to }],
      messages: [{ id: `wamid.${Buffer.from(randomUUID()).toString("base64url")}` }],
    };
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      let status = 200;
      let answer: unknown;
      try {
        if (req.method !== "POST") throw invalid(`Unsupported ${req.method ?? ""} request.`);
        answer = send(
          new URL(req.url ?? "/", "http://stand-in").pathname,
          req.headers.authorization,
          Buffer.concat(chunks).toString("utf8"),
        );
      } catch (error) {
        // A fault of the stand-in itself: a 500, as Meta's own faults are, never a crash of the run.
        status = error instanceof Refused ? error.status : 500;
        answer = error instanceof Refused ? error.body : { error: { message: String(error), code: 1 } };
      }
      res.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    phoneNumberId,
    accessToken,
    sends,
    personWrote: (contact, at) => void lastInbound.set(contact, Math.max(lastInbound.get(contact) ?? 0, at.getTime())),
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
