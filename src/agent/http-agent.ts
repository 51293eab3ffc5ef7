// The agent runtime over HTTP: the turn request signed with X-Hub-Signature-256 (HMAC of the body).
import { createHmac } from "node:crypto";
import {
  AgentUnavailableError,
  turnReplySchema,
  type AgentPort,
  type TurnReply,
  type TurnRequest,
} from "./agent-port.js";

const TURN_TIMEOUT_MS = 30_000;

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

export function httpAgent(url: string, secret: string | undefined): AgentPort {
  return {
    remote: true,
    async runTurn(request: TurnRequest): Promise<TurnReply> {
      const body = JSON.stringify(request);
      let response: Response;
      try {
        response = await fetch(url, {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            ...(secret ? { "X-Hub-Signature-256": signBody(secret, body) } : {}),
          },
          body,
          signal: AbortSignal.timeout(TURN_TIMEOUT_MS),
        });
      } catch (error) {
        throw new AgentUnavailableError(`the agent runtime could not be reached: ${(error as Error).message}`);
      }
      if (!response.ok) throw new AgentUnavailableError(`the agent runtime answered ${response.status}`);
      const parsed = turnReplySchema.safeParse(await response.json().catch(() => undefined));
      if (!parsed.success) throw new AgentUnavailableError("the agent runtime's answer is not {messages: [{text}]}");
      return parsed.data;
    },
  };
}
