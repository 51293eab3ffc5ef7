// Opening a client to a declared MCP server with the official SDK: Streamable HTTP (headers and OAuth client
// credentials, `$env.NAME` filled) or stdio (a child process). A Streamable HTTP session can be opened again
// by its id — how a task started by another process, or before a restart, is looked at.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { substitute } from "../tools/render-request.js";
import type { McpServerSpec } from "./mcp-server-file.js";

export type EnvLookup = (name: string) => string | undefined;

const CLIENT_INFO = { name: "chat-delivery-hub", version: "0.1.0" };

/** What the hub tells servers it can do: ask the person (elicitation, form mode). */
const CAPABILITIES = { elicitation: { form: {} } };

export interface OpenedClient {
  client: Client;
  transport: Transport;
  /** The Streamable HTTP session's id (undefined for stdio, or a server without sessions). */
  sessionId(): string | undefined;
  /** The protocol version agreed at initialisation (kept with a task, for reopening its session). */
  protocolVersion(): string | undefined;
  close(): Promise<void>;
}

export interface OpenOptions {
  env: EnvLookup;
  /** Reopen this Streamable HTTP session (no initialisation): a task's session. */
  session?: { id: string; protocolVersion?: string | undefined } | undefined;
  timeoutMs: number;
  /** Called with each line the stdio server writes to stderr (its logs). */
  onStderr?: (line: string) => void;
  /** Headers added to the server file's for this client (the person's identity, for one call's session). */
  headers?: Record<string, string> | undefined;
  /** Set before connecting: request handlers (elicitation) and notification handlers. */
  prepare?: (client: Client) => void;
}

/** The URL, headers and stdio settings of a server with `$env.NAME` filled in. */
export function filled(spec: McpServerSpec, env: EnvLookup) {
  const fill = (text: string) => substitute(text, env);
  if ("url" in spec) {
    return {
      kind: "http" as const,
      url: fill(spec.url),
      headers: Object.fromEntries(Object.entries(spec.headers).map(([key, value]) => [key, fill(value)])),
      oauth: spec.oauth && {
        clientId: fill(spec.oauth.client_id),
        clientSecret: fill(spec.oauth.client_secret),
        scope: spec.oauth.scope,
      },
    };
  }
  return {
    kind: "stdio" as const,
    command: fill(spec.command),
    args: spec.args.map(fill),
    env: Object.fromEntries(Object.entries(spec.env).map(([key, value]) => [key, fill(value)])),
    cwd: spec.cwd,
  };
}

export async function openClient(spec: McpServerSpec, options: OpenOptions): Promise<OpenedClient> {
  const settings = filled(spec, options.env);
  const client = new Client(CLIENT_INFO, { capabilities: CAPABILITIES });
  options.prepare?.(client);
  let transport: Transport;
  let http: StreamableHTTPClientTransport | undefined;
  if (settings.kind === "http") {
    http = new StreamableHTTPClientTransport(new URL(settings.url), {
      requestInit: { headers: { ...settings.headers, ...options.headers } },
      ...(settings.oauth
        ? {
            authProvider: new ClientCredentialsProvider({
              clientId: settings.oauth.clientId,
              clientSecret: settings.oauth.clientSecret,
              ...(settings.oauth.scope ? { scope: settings.oauth.scope } : {}),
            }),
          }
        : {}),
      ...(options.session ? { sessionId: options.session.id } : {}),
    });
    if (options.session?.protocolVersion) http.setProtocolVersion(options.session.protocolVersion);
    transport = http;
  } else {
    const stdio = new StdioClientTransport({
      command: settings.command,
      args: settings.args,
      // The server's own environment: the safe defaults (PATH, HOME…) and what its file names, never the hub's
      // secrets.
      env: { ...getDefaultEnvironment(), ...settings.env },
      ...(settings.cwd ? { cwd: settings.cwd } : {}),
      stderr: "pipe",
    });
    const stderr = stdio.stderr;
    if (stderr && options.onStderr) {
      let pending = "";
      stderr.on("data", (chunk: Buffer) => {
        pending += chunk.toString("utf8");
        const lines = pending.split("\n");
        pending = lines.pop() ?? "";
        for (const line of lines) if (line.trim()) options.onStderr!(line);
      });
    }
    transport = stdio;
  }
  try {
    await client.connect(transport, { timeout: options.timeoutMs });
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
  return {
    client,
    transport,
    sessionId: () => http?.sessionId,
    protocolVersion: () => http?.protocolVersion ?? options.session?.protocolVersion,
    close: () => client.close(),
  };
}

/** Ends a Streamable HTTP session on the server (its tasks with it), then closes the client. */
export async function endSession(opened: OpenedClient): Promise<void> {
  const transport = opened.transport;
  if (transport instanceof StreamableHTTPClientTransport && transport.sessionId)
    await transport.terminateSession().catch(() => undefined);
  await opened.close().catch(() => undefined);
}
