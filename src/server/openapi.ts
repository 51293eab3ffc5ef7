// The OpenAPI 3.1 document of /v1, generated from the operations table (the routes' own zod schemas) and
// served at /v1/openapi.json. JSON Schema 2020-12 is OpenAPI 3.1's schema dialect, so zod's output is used
// as it is.
import { z } from "zod";
import { agentTurnWebhook, apiOperations, commonErrors, toolResult, type ApiOperation } from "./api-operations.js";
import { teamOperations } from "./team-operations.js";
import { conversationSummaryView, conversationView, errorView, jobView, messageView, toolView } from "./api-views.js";

type JsonSchema = Record<string, unknown>;

const componentRef = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/** `post /conversations/:id/tool-calls` → `postConversationsByIdToolCalls`. */
export function operationId(operation: Pick<ApiOperation, "method" | "path">): string {
  const words = operation.path
    .split("/")
    .filter(Boolean)
    .flatMap((segment) => (segment.startsWith(":") ? ["by", segment.slice(1)] : segment.split("-")));
  return operation.method + words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join("");
}

/** `/conversations/:id` → `/conversations/{id}`. */
export function openApiPath(path: string): string {
  return path.replace(/:(\w+)/g, "{$1}");
}

/** Converts a set of named schemas at once, so that shared ones become references between components. */
function components(named: Record<string, z.ZodType>, io: "input" | "output"): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(named)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
    uri: (id) => `#/components/schemas/${id}`,
  });
  for (const schema of Object.values(schemas)) {
    delete (schema as JsonSchema).$schema;
    delete (schema as JsonSchema).$id;
  }
  return schemas as Record<string, JsonSchema>;
}

function queryParameters(schema: JsonSchema): JsonSchema[] {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: "query",
      required: required.has(name) && rest.default === undefined,
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

function jsonContent(ref: JsonSchema) {
  return { "application/json": { schema: ref } };
}

export function openApiDocument(serverUrl: string): JsonSchema {
  const operations = [...apiOperations, ...teamOperations];
  const outputs: Record<string, z.ZodType> = {
    Error: errorView,
    Conversation: conversationView,
    ConversationSummary: conversationSummaryView,
    Message: messageView,
    Job: jobView,
    Tool: toolView,
    ToolResult: toolResult,
    TurnRequest: agentTurnWebhook.request,
  };
  const inputs: Record<string, z.ZodType> = { TurnReply: agentTurnWebhook.reply };
  for (const operation of operations) {
    const id = operationId(operation);
    if (operation.body) inputs[`${id}Body`] = operation.body;
    if (operation.query) inputs[`${id}Query`] = operation.query;
    for (const [status, response] of Object.entries(operation.responses)) {
      if (response.schema) outputs[`${id}${status}`] = response.schema;
    }
  }
  const schemas = { ...components(outputs, "output"), ...components(inputs, "input") };
  // Queries become parameters, not components.
  const queries: Record<string, JsonSchema> = {};
  for (const key of Object.keys(schemas)) {
    if (key.endsWith("Query")) {
      queries[key] = schemas[key]!;
      delete schemas[key];
    }
  }

  const paths: Record<string, Record<string, unknown>> = {};
  for (const operation of operations) {
    const id = operationId(operation);
    const path = openApiPath(operation.path);
    const pathParameters = [...operation.path.matchAll(/:(\w+)/g)].map((match) => ({
      name: match[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(operation.responses)) {
      responses[status] = {
        description: response.description,
        ...(response.schema ? { content: jsonContent(componentRef(`${id}${status}`)) } : {}),
      };
    }
    for (const [status, description] of Object.entries({ ...commonErrors, ...operation.errors })) {
      responses[status] = { description, content: jsonContent(componentRef("Error")) };
    }
    paths[path] ??= {};
    paths[path][operation.method] = {
      operationId: id,
      summary: operation.summary,
      ...(operation.description ? { description: operation.description } : {}),
      security: operation.keys.map((key) => ({ [`${key}Key`]: [] })),
      parameters: [...pathParameters, ...(operation.query ? queryParameters(queries[`${id}Query`]!) : [])],
      ...(operation.body
        ? { requestBody: { required: !operation.bodyOptional, content: jsonContent(componentRef(`${id}Body`)) } }
        : {}),
      responses,
    };
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "chat-delivery-hub agent-runtime and console API",
      version: "1",
      description:
        "Errors are `{error: {code, message, details?}}`; `details` names each invalid field. " +
        "The hub calls the agent runtime with the `agentTurn` webhook.",
    },
    servers: [{ url: `${serverUrl.replace(/\/$/, "")}/v1` }],
    components: {
      securitySchemes: {
        agentKey: { type: "http", scheme: "bearer", description: "HUB_API_KEY" },
        consoleKey: { type: "http", scheme: "bearer", description: "CONSOLE_API_KEY" },
        memberKey: { type: "http", scheme: "bearer", description: "a team member's own key (hubm_…)" },
      },
      schemas,
    },
    paths,
    webhooks: {
      agentTurn: {
        post: {
          summary: "A turn: the hub asks the agent runtime (AGENT_URL) what to say",
          description:
            "Signed: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body with AGENT_SECRET>`. The body " +
            "carries `requestId` (new for every request, retries included) and `sentAt`: refuse a request whose " +
            "`sentAt` is more than 5 minutes old or whose `requestId` was seen, and a captured request cannot be " +
            "replayed. Answer within the turn timeout (AGENT_TIMEOUT_MS, 30 s by default); anything but a 2xx " +
            "with a valid body is retried with backoff. `messages: []` is a valid answer: nothing is said and the " +
            "inputs count as answered. A file the person sent comes as `user_message.attachments[].url`, the hub's " +
            "own `/media/<token>` URL: fetch it without a key (give it to a tool) until it expires (MEDIA_URL_TTL).",
          parameters: [
            {
              name: "X-Hub-Signature-256",
              in: "header",
              required: false,
              description: "present when AGENT_SECRET is set (always, in production)",
              schema: { type: "string", pattern: "^sha256=[0-9a-f]{64}$" },
            },
          ],
          requestBody: { required: true, content: jsonContent(componentRef("TurnRequest")) },
          responses: { 200: { description: "what to say", content: jsonContent(componentRef("TurnReply")) } },
        },
      },
    },
  };
}
