// Where the hub may read a person's file from (media-fetch.ts): only Meta's hosts (MEDIA_HOSTS, each with its
// subdomains, and the Graph API's own origin), and only at public addresses. The address checked is the one
// the connection is made to — the name is resolved by the request's own lookup — so a name that answers a
// public address to one look-up and a private one to the next (DNS rebinding) is refused all the same. A
// private or loopback address is reached only where the operator named it: an address listed in MEDIA_HOSTS,
// or META_GRAPH_API_URL's origin (its host and port).
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { Readable } from "node:stream";

export interface MediaHosts {
  /** Hosts (names or addresses), each allowing itself and, for names, its subdomains; an address may be private. */
  hosts: readonly string[];
  /** Origins (`http://host:port`) allowed as they are, at any address: the Graph API's. */
  origins: readonly string[];
}

/** A file's host the hub does not read from; its message says why, naming the host (never the URL). */
export class MediaHostRefused extends Error {
  readonly code = "EMEDIAHOST";
}

const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  PRIVATE.addSubnet(network, prefix, "ipv4");
for (const [network, prefix] of [
  ["::", 127], // unspecified and loopback
  ["64:ff9b:1::", 48],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const)
  PRIVATE.addSubnet(network, prefix, "ipv6");

/** Whether an address is loopback, private, link-local, shared, reserved or multicast (IPv4-mapped too). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return PRIVATE.check(mapped[1]!, "ipv4");
  const family = isIP(address);
  if (family === 0) return true;
  return PRIVATE.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** A URL's host as compared: lower case, without IPv6 brackets or a trailing dot. */
export const hostOf = (url: URL): string =>
  url.hostname
    .toLowerCase()
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "");

/** Whether the hub reads files from this URL (an http or https URL of a host or origin on the list). */
export function hostAllowed(allowed: MediaHosts, url: URL): boolean {
  if (url.protocol !== "https:" && url.protocol !== "http:") return false;
  if (allowed.origins.includes(url.origin)) return true;
  const host = hostOf(url);
  return allowed.hosts.some((entry) => host === entry || (isIP(entry) === 0 && host.endsWith(`.${entry}`)));
}

/** Whether this URL may be at a private address: its origin is the Graph API's, or its host an address listed. */
const privateAllowed = (allowed: MediaHosts, url: URL): boolean =>
  allowed.origins.includes(url.origin) || (isIP(hostOf(url)) !== 0 && allowed.hosts.includes(hostOf(url)));

/** The request's own lookup: the addresses it will connect to, refused when any is private (unless allowed). */
function guardedLookup(privateOk: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, "", 0);
      const hidden = addresses.find((entry) => isPrivateAddress(entry.address));
      if (hidden && !privateOk)
        return callback(new MediaHostRefused(`${hostname} resolves to a private address, which is not fetched`), "", 0);
      if (options.all) return callback(null, addresses);
      const [first] = addresses;
      return first
        ? callback(null, first.address, first.family)
        : callback(new Error(`no address for ${hostname}`), "", 0);
    });
  };
}

/**
 * One GET, never redirected (a redirect comes back as it is, for the caller to judge), at a checked address.
 * The answer is a web Response, as fetch gives one; throws MediaHostRefused for a host off the list or at a
 * private address.
 */
export async function mediaGet(
  allowed: MediaHosts,
  target: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<Response> {
  const url = new URL(target);
  const host = hostOf(url);
  if (!hostAllowed(allowed, url)) throw new MediaHostRefused(`${host} is not one of MEDIA_HOSTS`);
  const privateOk = privateAllowed(allowed, url);
  if (isIP(host) !== 0 && isPrivateAddress(host) && !privateOk)
    throw new MediaHostRefused(`${host} is a private address, which is not fetched`);
  const client = url.protocol === "https:" ? https : http;
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    // No shared agent: a pooled connection could have been opened without this lookup.
    const request = client.request(url, {
      method: "GET",
      headers,
      signal,
      agent: false,
      lookup: guardedLookup(privateOk),
    });
    request.once("response", resolve);
    request.once("error", reject);
    request.end();
  });
  const answerHeaders = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) answerHeaders.append(name, one);
  }
  const status = response.statusCode ?? 502;
  const empty = [204, 205, 304].includes(status);
  if (empty) response.resume();
  const body = empty ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>);
  return new Response(body, { status, headers: answerHeaders });
}
