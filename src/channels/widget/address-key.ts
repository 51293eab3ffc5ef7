// The key a client address is counted under: an IPv4 address as it is, an IPv6 address by its /64 — one
// subscriber, a home or a cloud instance, is handed a whole /64, and counting each of its 2^64 addresses apart
// would be no limit at all.
import { isIPv4, isIPv6 } from "node:net";

/** The eight 16-bit groups of an IPv6 address (`::` expanded, an embedded IPv4 tail as two groups). */
function groups(address: string): string[] {
  let text = address.toLowerCase().split("%")[0]!;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split(".").map(Number) as [number, number, number, number];
    text = text.slice(0, -v4[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const fill = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill("0");
  return [...left, ...fill, ...right].map((group) => group.replace(/^0+(?=.)/, ""));
}

export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (isIPv4(address) || !isIPv6(address)) return address;
  return `${groups(address).slice(0, 4).join(":")}::/64`;
}
