// A Graph API client on axios: one base URL and version, one access token, every answer read (never thrown)
// so the caller can tell "Meta refused" from "Meta never answered". A redirect is never followed: it would carry
// the access token to whatever host it names; it fails the send, saying where it pointed.
import axios, { type AxiosInstance } from "axios";
import { redirectRefusal } from "../../redirect-refusal.js";
import { parseGraphError, type GraphError } from "./graph-error.js";

export type GraphAnswer<T> = { ok: true; data: T } | { ok: false; error: GraphError };

export interface GraphClient {
  post<T>(path: string, body: unknown): Promise<GraphAnswer<T>>;
}

const TIMEOUT_MS = 15_000;

export function graphClient(baseUrl: string, version: string, accessToken: string): GraphClient {
  const http: AxiosInstance = axios.create({
    baseURL: `${baseUrl}/${version}/`,
    timeout: TIMEOUT_MS,
    headers: { Authorization: `Bearer ${accessToken}`, "Content-Type": "application/json" },
    validateStatus: () => true,
    // Not 0: that switches axios to its plain http transport, which changed the sends' timing enough to break
    // WhatsApp pacing (meta-channels test). The first redirect is refused in `beforeRedirect` instead, before
    // anything is sent to where it points.
    maxRedirects: 1,
    beforeRedirect: (_options, { statusCode, headers }) => {
      const title = redirectRefusal("the Graph API", `${baseUrl}/`, statusCode, headers.location) ?? "";
      throw Object.assign(new Error(title), { redirectStatus: statusCode });
    },
  });
  return {
    async post<T>(path: string, body: unknown): Promise<GraphAnswer<T>> {
      try {
        const response = await http.post(path, body);
        if (response.status >= 200 && response.status < 300) return { ok: true, data: response.data as T };
        const location = response.headers.location as string | undefined;
        const redirect = redirectRefusal("the Graph API", `${baseUrl}/`, response.status, location);
        if (redirect) return { ok: false, error: { ...parseGraphError(response.status, undefined), title: redirect } };
        return { ok: false, error: parseGraphError(response.status, response.data) };
      } catch (error) {
        const refused = refusedRedirectIn(error);
        if (refused)
          return {
            ok: false,
            error: { ...parseGraphError(refused.redirectStatus, undefined), title: refused.message },
          };
        // No response at all: connection refused, reset, or timed out.
        return { ok: false, error: { ...parseGraphError(null, undefined), title: (error as Error).message } };
      }
    },
  };
}

/** The refusal `beforeRedirect` threw, wherever axios and follow-redirects wrapped it. */
function refusedRedirectIn(error: unknown): (Error & { redirectStatus: number }) | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (typeof (cause as { redirectStatus?: unknown }).redirectStatus === "number")
      return cause as Error & { redirectStatus: number };
  }
  return undefined;
}
