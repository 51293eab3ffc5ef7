// The Graph stand-in's WhatsApp media (part of fake-graph.ts): a media id the person's message named is looked
// up with `GET /{version}/{media-id}` — with the token of the phone number it was sent to, as at Meta, which
// answers 401 (code 190) to any other — and answers Meta's JSON {messaging_product, url, mime_type, sha256,
// file_size, id}; the `url` it gives serves the bytes only with that same token as a Bearer header, and only
// for five minutes. `phone_number_id`, when given, must be the number the media belongs to.
import { createHash, randomBytes } from "node:crypto";
import type { Express, Request, Response } from "express";

const DOWNLOAD_TTL_MS = 5 * 60_000;

interface MediaFile {
  bytes: Buffer;
  mimeType: string;
  phoneNumberId: string;
}

export interface MediaRequest {
  kind: "lookup" | "download";
  mediaId: string;
  /** The Bearer token the request carried (tests compare it with the number's). */
  token: string | undefined;
  status: number;
}

interface MediaHost {
  readonly url: string;
  readonly version: string;
  readonly phoneNumberId: string;
  readonly clock: () => number;
  tokenFor(node: string): string;
}

const oauthError = (message: string) => ({
  error: { message, type: "OAuthException", code: 190, fbtrace_id: randomBytes(8).toString("base64url") },
});

export class FakeGraphMedia {
  readonly requests: MediaRequest[] = [];
  private readonly files = new Map<string, MediaFile>();
  /** Download key → media id and when the link stops working (Graph's links last about five minutes). */
  private readonly links = new Map<string, { mediaId: string; expiresAt: number }>();

  constructor(private readonly host: MediaHost) {}

  /** A file a person sent to this phone number (the first one by default), known by this media id. */
  add(mediaId: string, bytes: Buffer, mimeType: string, phoneNumberId = this.host.phoneNumberId): void {
    this.files.set(mediaId, { bytes, mimeType, phoneNumberId });
  }

  /** Forgets a media id, as Meta does after about 30 days. */
  remove(mediaId: string): void {
    this.files.delete(mediaId);
  }

  routes(app: Express): void {
    app.get("/whatsapp_business/attachments/", (req, res) => this.download(req, res));
    app.get("/:version/:mediaId", (req, res, next) => {
      if (!this.files.has(String(req.params.mediaId))) return next();
      this.lookup(req, res);
    });
  }

  private lookup(req: Request, res: Response): void {
    const mediaId = String(req.params.mediaId);
    const file = this.files.get(mediaId)!;
    const token = bearer(req) ?? (typeof req.query.access_token === "string" ? req.query.access_token : undefined);
    const answer = (status: number, body: unknown) => {
      this.requests.push({ kind: "lookup", mediaId, token, status });
      res.status(status).json(body);
    };
    if (token !== this.host.tokenFor(file.phoneNumberId))
      return answer(401, oauthError("Invalid OAuth access token - Cannot parse access token"));
    const asked = req.query.phone_number_id;
    if (String(req.params.version) !== this.host.version || (asked !== undefined && asked !== file.phoneNumberId)) {
      return answer(400, {
        error: {
          message: `Unsupported get request. Object with ID '${mediaId}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
          type: "GraphMethodException",
          code: 100,
          error_subcode: 33,
          fbtrace_id: randomBytes(8).toString("base64url"),
        },
      });
    }
    const key = randomBytes(12).toString("hex");
    this.links.set(key, { mediaId, expiresAt: this.host.clock() + DOWNLOAD_TTL_MS });
    answer(200, {
      messaging_product: "whatsapp",
      url: `${this.host.url}/whatsapp_business/attachments/?mid=${mediaId}&ext=${Math.floor(this.host.clock() / 1000)}&hash=${key}`,
      mime_type: file.mimeType,
      sha256: createHash("sha256").update(file.bytes).digest("hex"),
      file_size: file.bytes.length,
      id: mediaId,
    });
  }

  private download(req: Request, res: Response): void {
    const link = this.links.get(String(req.query.hash ?? ""));
    const mediaId = link?.mediaId ?? String(req.query.mid ?? "");
    const file = this.files.get(mediaId);
    const token = bearer(req);
    const answer = (status: number, send: () => void) => {
      this.requests.push({ kind: "download", mediaId, token, status });
      send();
    };
    if (!link || !file || link.expiresAt <= this.host.clock())
      return answer(404, () => res.status(404).json({ error: { message: "URL signature expired", code: 100 } }));
    if (token !== this.host.tokenFor(file.phoneNumberId))
      return answer(401, () => res.status(401).json(oauthError("Invalid OAuth access token")));
    answer(200, () => res.status(200).type(file.mimeType).send(file.bytes));
  }
}

function bearer(req: Request): string | undefined {
  const header = req.get("authorization");
  return header?.startsWith("Bearer ") ? header.slice("Bearer ".length) : undefined;
}
