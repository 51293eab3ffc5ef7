// A local stand-in for a Web Push service (RFC 8030), the one a browser's PushManager would subscribe with.
// Like a real one it refuses a request without a valid VAPID authorization (RFC 8292: `vapid t=<ES256 JWT>,
// k=<public key>`, the JWT signed by that key, `aud` its own origin, `exp` in the future and within a day,
// `k` the applicationServerKey the subscription was made with), needs a TTL, and takes only an aes128gcm
// body, which it decrypts with the subscription's private key and auth secret (RFC 8291, RFC 8188), as the
// browser would. Tests make subscriptions, read back every notification (decrypted) and every attempt, and
// can make an endpoint answer 410 Gone or a series of failures.
//
// Deliberately independent of the hub's code and of the `web-push` library: it verifies and decrypts with
// node:crypto alone, so a bug shared between the hub and a helper it exports cannot hide.
import { createDecipheriv, createECDH, createPublicKey, hkdfSync, randomBytes, verify, type ECDH } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What PushSubscription.toJSON() gives a page. */
export interface FakeSubscription {
  endpoint: string;
  expirationTime: null;
  keys: { p256dh: string; auth: string };
}

export interface ReceivedPush {
  endpoint: string;
  /** The decrypted payload, as text and parsed (undefined when it is not JSON). */
  text: string;
  json: unknown;
  ttl: number;
  urgency: string | undefined;
  topic: string | undefined;
}

export interface PushAttempt {
  endpoint: string;
  status: number;
  /** Why it was refused, when the fake refused it on its own account (not scripted). */
  problem?: string;
}

interface Subscriber {
  ecdh: ECDH;
  publicKey: Buffer;
  auth: Buffer;
  /** The applicationServerKey (the VAPID public key) the subscription was made with. */
  serverKey: string;
}

const b64url = (buffer: Buffer) => buffer.toString("base64url");

export class FakePushService {
  url = "";
  readonly notifications: ReceivedPush[] = [];
  readonly attempts: PushAttempt[] = [];
  private readonly subscribers = new Map<string, Subscriber>();
  private readonly gone = new Set<string>();
  private readonly scripted = new Map<string, { status: number; retryAfter?: string }[]>();
  private server: Server | undefined;

  static async start(): Promise<FakePushService> {
    const fake = new FakePushService();
    fake.server = createServer((req, res) =>
      // A bug of the fake answers 500 (the hub retries it) rather than hanging the request.
      fake.handle(req, res).catch((error: unknown) => {
        console.error("fake push service:", error);
        if (!res.headersSent) res.writeHead(500).end();
      }),
    );
    fake.server.listen(0, "127.0.0.1");
    await once(fake.server, "listening");
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  /** A new subscription for `applicationServerKey` (base64url), as a browser's PushManager.subscribe makes one. */
  subscribe(applicationServerKey: string): FakeSubscription {
    const ecdh = createECDH("prime256v1");
    const publicKey = ecdh.generateKeys();
    const auth = randomBytes(16);
    const id = randomBytes(24).toString("base64url");
    this.subscribers.set(id, { ecdh, publicKey, auth, serverKey: applicationServerKey });
    return {
      endpoint: `${this.url}/push/${id}`,
      expirationTime: null,
      keys: { p256dh: b64url(publicKey), auth: b64url(auth) },
    };
  }

  /** The subscription lapsed: every push to it gets 410 Gone from now on. */
  expire(endpoint: string): void {
    this.gone.add(idOf(endpoint));
  }

  /** The next valid pushes to the endpoint get these answers, in order (then it accepts again). */
  failNext(endpoint: string, answers: { status: number; retryAfter?: string }[]): void {
    this.scripted.set(idOf(endpoint), [...answers]);
  }

  notificationsFor(endpoint: string): ReceivedPush[] {
    return this.notifications.filter((notification) => notification.endpoint === endpoint);
  }

  attemptsFor(endpoint: string): PushAttempt[] {
    return this.attempts.filter((attempt) => attempt.endpoint === endpoint);
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const match = /^\/push\/([A-Za-z0-9_-]+)$/.exec(req.url ?? "");
    const endpoint = `${this.url}${req.url ?? ""}`;
    const answer = (status: number, problem?: string, headers: Record<string, string> = {}) => {
      this.attempts.push({ endpoint, status, ...(problem ? { problem } : {}) });
      res.writeHead(status, { "Content-Type": "text/plain", ...headers }).end(problem ?? "");
    };
    if (req.method !== "POST" || !match) return answer(404, "no such endpoint");
    const id = match[1]!;
    const subscriber = this.subscribers.get(id);
    if (!subscriber) return answer(404, "no such subscription");
    if (this.gone.has(id)) return answer(410, "subscription expired");

    const vapid = this.checkVapid(req.headers.authorization, subscriber);
    if (vapid) return answer(vapid.status, vapid.problem);
    const ttl = Number(req.headers.ttl);
    if (req.headers.ttl === undefined || !Number.isInteger(ttl) || ttl < 0) return answer(400, "TTL header missing");
    if (req.headers["content-encoding"] !== "aes128gcm") return answer(415, "content-encoding must be aes128gcm");

    let text: string;
    try {
      text = decrypt(body, subscriber);
    } catch (error) {
      return answer(400, `payload does not decrypt: ${(error as Error).message}`);
    }
    const next = this.scripted.get(id)?.shift();
    if (next) return answer(next.status, undefined, next.retryAfter ? { "Retry-After": next.retryAfter } : {});

    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    this.notifications.push({
      endpoint,
      text,
      json,
      ttl,
      urgency: header(req.headers.urgency),
      topic: header(req.headers.topic),
    });
    answer(201, undefined, { Location: `${this.url}/message/${randomBytes(8).toString("hex")}` });
  }

  /** RFC 8292 §2–§4: undefined when the authorization is good, else the answer a push service gives. */
  private checkVapid(
    authorization: string | undefined,
    subscriber: Subscriber,
  ): { status: number; problem: string } | undefined {
    const parts = /^vapid\s+(.+)$/i.exec(authorization ?? "")?.[1];
    if (!parts) return { status: 401, problem: "no vapid authorization" };
    const params = new Map(
      parts.split(",").map((part) => {
        const [key, ...rest] = part.trim().split("=");
        return [key!.trim(), rest.join("=").trim()] as const;
      }),
    );
    const token = params.get("t");
    const key = params.get("k");
    if (!token || !key) return { status: 401, problem: "vapid t= and k= are both needed" };
    const [headerPart, claimsPart, signaturePart, extra] = token.split(".");
    if (!headerPart || !claimsPart || !signaturePart || extra !== undefined)
      return { status: 401, problem: "not a JWT" };
    let head: { alg?: string; typ?: string };
    let claims: { aud?: string; exp?: number; sub?: string };
    try {
      head = JSON.parse(Buffer.from(headerPart, "base64url").toString()) as typeof head;
      claims = JSON.parse(Buffer.from(claimsPart, "base64url").toString()) as typeof claims;
    } catch {
      return { status: 401, problem: "JWT parts are not JSON" };
    }
    if (head.alg !== "ES256") return { status: 401, problem: `JWT alg ${head.alg}` };
    const point = Buffer.from(key, "base64url");
    if (point.length !== 65 || point[0] !== 4) return { status: 401, problem: "k is not an uncompressed P-256 point" };
    const publicKey = createPublicKey({
      key: { kty: "EC", crv: "P-256", x: b64url(point.subarray(1, 33)), y: b64url(point.subarray(33)) },
      format: "jwk",
    });
    const signed = verify(
      "sha256",
      Buffer.from(`${headerPart}.${claimsPart}`),
      { key: publicKey, dsaEncoding: "ieee-p1363" },
      Buffer.from(signaturePart, "base64url"),
    );
    if (!signed) return { status: 401, problem: "JWT signature does not verify with k" };
    const now = Math.floor(Date.now() / 1000);
    if (claims.aud !== this.url) return { status: 401, problem: `aud ${claims.aud} is not ${this.url}` };
    if (typeof claims.exp !== "number" || claims.exp <= now) return { status: 401, problem: "JWT expired" };
    if (claims.exp > now + 24 * 3600) return { status: 401, problem: "exp more than 24 hours ahead" };
    if (typeof claims.sub !== "string" || !/^(mailto:|https:)/.test(claims.sub))
      return { status: 401, problem: "sub must be mailto: or https:" };
    // The subscription is bound to the key it was made with (RFC 8292 §4.2).
    if (key !== subscriber.serverKey) return { status: 403, problem: "k is not the subscription's server key" };
    return undefined;
  }
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function idOf(endpoint: string): string {
  return endpoint.slice(endpoint.lastIndexOf("/") + 1);
}

/** RFC 8188 aes128gcm content coding with RFC 8291's keys: what the browser does on receipt. */
function decrypt(body: Buffer, subscriber: Subscriber): string {
  if (body.length < 21) throw new Error("shorter than the header");
  const salt = body.subarray(0, 16);
  const recordSize = body.readUInt32BE(16);
  const idLength = body[20]!;
  const senderKey = body.subarray(21, 21 + idLength);
  if (idLength !== 65 || senderKey[0] !== 4) throw new Error("keyid is not the sender's P-256 public key");
  if (recordSize < 18) throw new Error("record size too small");
  const ecdhSecret = subscriber.ecdh.computeSecret(senderKey);
  const keyInfo = Buffer.concat([Buffer.from("WebPush: info\0"), subscriber.publicKey, senderKey]);
  const ikm = Buffer.from(hkdfSync("sha256", ecdhSecret, subscriber.auth, keyInfo, 32));
  const cek = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: aes128gcm\0"), 16));
  const baseNonce = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: nonce\0"), 12));
  const records = body.subarray(21 + idLength);
  const plain: Buffer[] = [];
  for (let offset = 0, seq = 0; offset < records.length; offset += recordSize, seq++) {
    const record = records.subarray(offset, offset + recordSize);
    const nonce = Buffer.from(baseNonce);
    nonce.writeUInt32BE((nonce.readUInt32BE(8) ^ seq) >>> 0, 8);
    const decipher = createDecipheriv("aes-128-gcm", cek, nonce);
    decipher.setAuthTag(record.subarray(record.length - 16));
    const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
    let end = padded.length - 1;
    while (end >= 0 && padded[end] === 0) end--;
    const last = offset + recordSize >= records.length;
    if (padded[end] !== (last ? 2 : 1)) throw new Error("bad padding delimiter");
    plain.push(padded.subarray(0, end));
  }
  return Buffer.concat(plain).toString("utf8");
}
