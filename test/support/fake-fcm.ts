// A local stand-in for Firebase Cloud Messaging's HTTP v1 API and Google's OAuth token endpoint. It makes a
// service account (an RSA key pair; the JSON key file a Firebase project would hand out, with its token_uri
// pointing here), exchanges a JWT assertion for an access token only when the assertion is signed RS256 by
// that account's key with the right issuer, scope, audience and lifetime (RFC 7523), and accepts
// `messages:send` only with a live access token for its project. Devices are registration tokens it issues;
// an unregistered one answers 404 UNREGISTERED, as FCM does. Tests read back every message and attempt,
// count token exchanges, make a token unregistered, or make the next sends fail.
//
// Independent of the hub's code: it parses and verifies on its own with node:crypto.
import { generateKeyPairSync, randomBytes, verify, type KeyObject } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export const FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging";

export interface ServiceAccountKey {
  type: "service_account";
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id: string;
  token_uri: string;
}

export interface FcmMessage {
  token: string;
  notification?: { title?: string; body?: string };
  data?: Record<string, string>;
  android?: unknown;
  apns?: unknown;
}

export interface FcmAttempt {
  token: string | undefined;
  status: number;
  errorCode?: string;
}

export class FakeFcm {
  url = "";
  readonly projectId = "hub-push-tests";
  serviceAccount!: ServiceAccountKey;
  readonly messages: FcmMessage[] = [];
  readonly attempts: FcmAttempt[] = [];
  /** Every token exchange, with why it was refused (undefined when it was accepted). */
  readonly tokenRequests: { refused: string | undefined }[] = [];
  /** Every access token issued (to check that none reaches a log). */
  readonly issuedAccessTokens: string[] = [];
  /** Lifetime of the access tokens it issues. */
  expiresInSeconds = 3600;
  private publicKey!: KeyObject;
  private readonly accessTokens = new Map<string, number>();
  private readonly devices = new Set<string>();
  private readonly unregistered = new Set<string>();
  private readonly scripted = new Map<string, number[]>();
  private server: Server | undefined;

  static async start(): Promise<FakeFcm> {
    const fake = new FakeFcm();
    fake.server = createServer((req, res) =>
      // A bug of the fake answers 500 (the hub retries it) rather than hanging the request.
      fake.handle(req, res).catch((error: unknown) => {
        console.error("fake FCM:", error);
        if (!res.headersSent) res.writeHead(500).end();
      }),
    );
    fake.server.listen(0, "127.0.0.1");
    await once(fake.server, "listening");
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    fake.publicKey = publicKey;
    fake.serviceAccount = {
      type: "service_account",
      project_id: fake.projectId,
      private_key_id: randomBytes(20).toString("hex"),
      private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      client_email: `firebase-adminsdk@${fake.projectId}.iam.gserviceaccount.com`,
      client_id: "100000000000000000001",
      token_uri: `${fake.url}/token`,
    };
    return fake;
  }

  /** A registration token, as the FCM SDK in an app gets one. */
  device(): string {
    const token = `${randomBytes(11).toString("base64url")}:APA91b${randomBytes(100).toString("base64url")}`;
    this.devices.add(token);
    return token;
  }

  /** The app was uninstalled: sends to the token answer 404 UNREGISTERED from now on. */
  unregister(token: string): void {
    this.unregistered.add(token);
  }

  /** The next sends to the token get these HTTP statuses (429, 500, 503…), in order. */
  failNext(token: string, statuses: number[]): void {
    this.scripted.set(token, [...statuses]);
  }

  /** Every access token issued so far stops working (as after a key rotation). */
  revokeAccessTokens(): void {
    this.accessTokens.clear();
  }

  messagesTo(token: string): FcmMessage[] {
    return this.messages.filter((message) => message.token === token);
  }

  attemptsTo(token: string): FcmAttempt[] {
    return this.attempts.filter((attempt) => attempt.token === token);
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const json = (status: number, value: unknown) =>
      res.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(value));
    if (req.method === "POST" && req.url === "/token") return this.token(req, body, json);
    const send = /^\/v1\/projects\/([^/]+)\/messages:send$/.exec(req.url ?? "");
    if (req.method === "POST" && send) return this.send(decodeURIComponent(send[1]!), req, body, json);
    json(404, { error: { code: 404, message: "not found", status: "NOT_FOUND" } });
  }

  private token(req: IncomingMessage, body: string, json: (status: number, value: unknown) => void): void {
    const refuse = (reason: string) => {
      this.tokenRequests.push({ refused: reason });
      json(400, { error: "invalid_grant", error_description: reason });
    };
    if (!String(req.headers["content-type"]).startsWith("application/x-www-form-urlencoded"))
      return refuse("body must be application/x-www-form-urlencoded");
    const form = new URLSearchParams(body);
    if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") return refuse("grant_type");
    const [headerPart, claimsPart, signaturePart, extra] = (form.get("assertion") ?? "").split(".");
    if (!headerPart || !claimsPart || !signaturePart || extra !== undefined) return refuse("assertion is not a JWT");
    let head: { alg?: string; kid?: string };
    let claims: { iss?: string; scope?: string; aud?: string; iat?: number; exp?: number };
    try {
      head = JSON.parse(Buffer.from(headerPart, "base64url").toString()) as typeof head;
      claims = JSON.parse(Buffer.from(claimsPart, "base64url").toString()) as typeof claims;
    } catch {
      return refuse("assertion parts are not JSON");
    }
    if (head.alg !== "RS256") return refuse(`alg ${head.alg}`);
    if (head.kid !== undefined && head.kid !== this.serviceAccount.private_key_id) return refuse("unknown kid");
    const signed = verify(
      "sha256",
      Buffer.from(`${headerPart}.${claimsPart}`),
      this.publicKey,
      Buffer.from(signaturePart, "base64url"),
    );
    if (!signed) return refuse("invalid JWT signature");
    const now = Math.floor(Date.now() / 1000);
    if (claims.iss !== this.serviceAccount.client_email) return refuse("iss");
    if (!(claims.scope ?? "").split(" ").includes(FCM_SCOPE)) return refuse("scope");
    if (claims.aud !== this.serviceAccount.token_uri) return refuse("aud");
    if (typeof claims.iat !== "number" || typeof claims.exp !== "number") return refuse("iat and exp are needed");
    if (claims.iat > now + 300 || claims.exp <= now || claims.exp - claims.iat > 3600) return refuse("lifetime");
    const accessToken = `ya29.${randomBytes(48).toString("base64url")}`;
    this.accessTokens.set(accessToken, Date.now() + this.expiresInSeconds * 1000);
    this.issuedAccessTokens.push(accessToken);
    this.tokenRequests.push({ refused: undefined });
    json(200, { access_token: accessToken, expires_in: this.expiresInSeconds, token_type: "Bearer" });
  }

  private send(
    project: string,
    req: IncomingMessage,
    body: string,
    json: (status: number, value: unknown) => void,
  ): void {
    let message: Partial<FcmMessage> | undefined;
    try {
      message = (JSON.parse(body) as { message?: Partial<FcmMessage> }).message;
    } catch {
      message = undefined;
    }
    const token = typeof message?.token === "string" ? message.token : undefined;
    const fail = (status: number, grpcStatus: string, errorCode?: string) => {
      this.attempts.push({ token, status, ...(errorCode ? { errorCode } : {}) });
      json(status, {
        error: {
          code: status,
          message: grpcStatus,
          status: grpcStatus,
          ...(errorCode
            ? { details: [{ "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode }] }
            : {}),
        },
      });
    };
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
    const expiresAt = bearer ? this.accessTokens.get(bearer) : undefined;
    if (!expiresAt || expiresAt <= Date.now()) return fail(401, "UNAUTHENTICATED");
    if (project !== this.projectId) return fail(403, "PERMISSION_DENIED");
    if (!message || !token) return fail(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    const data = message.data ?? {};
    if (typeof data !== "object" || Object.values(data).some((value) => typeof value !== "string"))
      return fail(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    if (message.notification && typeof message.notification.title !== "string")
      return fail(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    if (!this.devices.has(token)) return fail(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    if (this.unregistered.has(token)) return fail(404, "NOT_FOUND", "UNREGISTERED");
    const scripted = this.scripted.get(token)?.shift();
    if (scripted) {
      return fail(
        scripted,
        scripted === 429 ? "RESOURCE_EXHAUSTED" : "UNAVAILABLE",
        scripted === 429 ? "QUOTA_EXCEEDED" : "UNAVAILABLE",
      );
    }
    this.messages.push(message as FcmMessage);
    this.attempts.push({ token, status: 200 });
    json(200, { name: `projects/${this.projectId}/messages/0:${Date.now()}%${randomBytes(8).toString("hex")}` });
  }
}
