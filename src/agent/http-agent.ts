// The agent runtime over HTTP: the turn request signed with X-Hub-Signature-256 (HMAC of the body). The
// body carries a fresh `requestId` and `sentAt`, so the signature also covers them: a runtime that refuses
// stale or already-seen requests cannot be made to act on a captured one again.
import { createHmac, randomUUID } from "node:crypto";
import {
  AgentUnavailableError,
  turnReplySchema,
  type AgentPort,
  type TurnReply,
  type TurnRequest,
} from "./agent-port.js";
import { refusedRedirect } from "../redirect-refusal.js";

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

export function httpAgent(agent: { url: string; secret: string | undefined; timeoutMs: number }): AgentPort {
  return {
    remote: true,
    async runTurn(request: TurnRequest): Promise<TurnReply> {
      const body = JSON.stringify({ requestId: randomUUID(), sentAt: new Date().toISOString(), ...request });
      let response: Response;
      try {
        response = await fetch(agent.url, {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            ...(agent.secret ? { "X-Hub-Signature-256": signBody(agent.secret, body) } : {}),
          },
          body,
          redirect: "manual",
          signal: AbortSignal.timeout(agent.timeoutMs),
        });
      } catch (error) {
        throw new AgentUnavailableError(`the agent runtime could not be reached: ${(error as Error).message}`);
      }
      const redirect = refusedRedirect("the agent runtime", agent.url, response);
      if (redirect) {
        await response.body?.cancel().catch(() => undefined);
        throw new AgentUnavailableError(redirect);
      }
      if (!response.ok) throw new AgentUnavailableError(`the agent runtime answered ${response.status}`);
      const parsed = turnReplySchema.safeParse(await response.json().catch(() => undefined));
      if (!parsed.success) throw new AgentUnavailableError("the agent runtime's answer is not {messages: [{text}]}");
      return parsed.data;
    },
  };
}
