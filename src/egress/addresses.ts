/**
 * IP addresses as numbers: parsing, CIDR ranges and the classifier that tells public destinations
 * from everything the egress proxy refuses by default (private, loopback, link-local, CGNAT,
 * multicast, unspecified, broadcast, documentation and reserved ranges, for IPv4 and IPv6).
 *
 * Invariants:
 *   A1 An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address a.b.c.d everywhere: it
 *      is parsed, classified and matched as IPv4, so `::ffff:127.0.0.1` is loopback.
 *   A2 Addresses that embed an IPv4 address for translation (NAT64 64:ff9b::/96, 6to4 2002::/16)
 *      are classified by the embedded address, so they cannot smuggle a private IPv4 destination.
 *   A3 Only IPv6 global unicast (2000::/3) outside the special ranges is public; anything the
 *      classifier does not know is not public.
 *   A4 A range has the class of the special range that contains all of it, and is `public`
 *      otherwise (`0.0.0.0/0`, `::/0` and any range that spans public space): the policy lets a
 *      public-scoped range match public addresses only.
 */
import { isIPv4, isIPv6 } from "node:net";

export interface ParsedIp {
  family: 4 | 6;
  /** The address as an unsigned integer of 32 (IPv4) or 128 (IPv6) bits. */
  value: bigint;
}

export interface IpRange {
  family: 4 | 6;
  /** The network address (host bits cleared). */
  network: bigint;
  prefix: number;
}

/** What kind of destination an address is. Everything but `public` is refused by default. */
export type AddressClass =
  | "public"
  | "private"
  | "loopback"
  | "link-local"
  | "cgnat"
  | "multicast"
  | "unspecified"
  | "broadcast"
  | "documentation"
  | "reserved";

const bits = (family: 4 | 6): number => (family === 4 ? 32 : 128);

function parseIpv4(text: string): bigint | undefined {
  if (!isIPv4(text)) return undefined;
  let value = 0n;
  for (const part of text.split(".")) value = (value << 8n) | BigInt(Number(part));
  return value;
}

function parseIpv6(text: string): bigint | undefined {
  if (!isIPv6(text)) return undefined;
  let groups: string[];
  let tail: string[] = [];
  // A trailing dotted IPv4 part (::ffff:1.2.3.4) stands for the last two groups.
  const lastColon = text.lastIndexOf(":");
  const last = text.slice(lastColon + 1);
  let head = text;
  if (last.includes(".")) {
    const v4 = parseIpv4(last);
    if (v4 === undefined) return undefined;
    tail = [(v4 >> 16n).toString(16), (v4 & 0xffffn).toString(16)];
    head = text.slice(0, lastColon + 1);
    if (head.endsWith(":") && !head.endsWith("::")) head = head.slice(0, -1);
  }
  const doubleColon = head.indexOf("::");
  if (doubleColon >= 0) {
    const left = head.slice(0, doubleColon).split(":").filter(Boolean);
    const right = head
      .slice(doubleColon + 2)
      .split(":")
      .filter(Boolean);
    const missing = 8 - tail.length - left.length - right.length;
    if (missing < 0) return undefined;
    groups = [...left, ...Array<string>(missing).fill("0"), ...right, ...tail];
  } else {
    groups = [...head.split(":").filter(Boolean), ...tail];
  }
  if (groups.length !== 8) return undefined;
  let value = 0n;
  for (const group of groups) value = (value << 16n) | BigInt(parseInt(group, 16));
  return value;
}

/**
 * Parse an IPv4 or IPv6 address (an IPv6 zone such as `%eth0` is ignored). IPv4-mapped IPv6
 * addresses come back as IPv4 (A1). Returns undefined for anything that is not an IP address.
 */
export function parseIp(text: string): ParsedIp | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return { family: 4, value: v4 };
  const zone = text.indexOf("%");
  const v6 = parseIpv6(zone >= 0 ? text.slice(0, zone) : text);
  if (v6 === undefined) return undefined;
  if (v6 >> 32n === 0xffffn) return { family: 4, value: v6 & 0xffffffffn }; // A1
  return { family: 6, value: v6 };
}

/** The canonical text of a parsed address (`1.2.3.4`, `2001:db8::1`). */
export function formatIp(ip: ParsedIp): string {
  if (ip.family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => String((ip.value >> shift) & 0xffn)).join(".");
  }
  const groups = Array.from({ length: 8 }, (_, index) =>
    Number((ip.value >> BigInt(112 - index * 16)) & 0xffffn),
  );
  // Compress the longest run (of at least two) of zero groups, as RFC 5952 asks.
  let bestStart = -1;
  let bestLength = 0;
  for (let start = 0; start < 8;) {
    if (groups[start] !== 0) {
      start += 1;
      continue;
    }
    let end = start;
    while (end < 8 && groups[end] === 0) end += 1;
    if (end - start > bestLength && end - start > 1) {
      bestStart = start;
      bestLength = end - start;
    }
    start = end;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/** Canonical text of an address, or undefined when it is not one (`::ffff:7f00:1` → `127.0.0.1`). */
export function normalizeIp(text: string): string | undefined {
  const parsed = parseIp(text);
  return parsed === undefined ? undefined : formatIp(parsed);
}

function mask(family: 4 | 6, prefix: number): bigint {
  const width = BigInt(bits(family));
  return ((1n << width) - 1n) ^ ((1n << (width - BigInt(prefix))) - 1n);
}

/**
 * Parse `10.0.0.0/8`, `fd00::/8` or a single address (a /32 or /128). Host bits are cleared.
 * An IPv6 range inside ::ffff:0:0/96 becomes the IPv4 range it maps (A1).
 */
export function parseCidr(text: string): IpRange | undefined {
  if (text.includes("%")) return undefined;
  const slash = text.indexOf("/");
  const addressText = slash >= 0 ? text.slice(0, slash) : text;
  const prefixText = slash >= 0 ? text.slice(slash + 1) : undefined;
  const v4 = parseIpv4(addressText);
  const v6 = v4 === undefined ? parseIpv6(addressText) : undefined;
  if (v4 === undefined && v6 === undefined) return undefined;
  let family: 4 | 6 = v4 !== undefined ? 4 : 6;
  let value = v4 ?? v6 ?? 0n;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined;
  let prefix = prefixText === undefined ? bits(family) : Number(prefixText);
  if (prefix > bits(family)) return undefined;
  if (family === 6 && prefix >= 96 && value >> 32n === 0xffffn) {
    family = 4; // A1
    value &= 0xffffffffn;
    prefix -= 96;
  }
  return { family, network: value & mask(family, prefix), prefix };
}

export function rangeContains(range: IpRange, ip: ParsedIp): boolean {
  return (
    range.family === ip.family && (ip.value & mask(range.family, range.prefix)) === range.network
  );
}

/** Whether the range is exactly one address (a /32 or /128). */
export function isSingleAddress(range: IpRange): boolean {
  return range.prefix === bits(range.family);
}

export function formatRange(range: IpRange): string {
  const address = formatIp({ family: range.family, value: range.network });
  return isSingleAddress(range) ? address : `${address}/${range.prefix}`;
}

interface SpecialRange {
  range: IpRange;
  kind: AddressClass | "embedded-v4";
}

function special(cidr: string, kind: SpecialRange["kind"]): SpecialRange {
  const range = parseCidr(cidr);
  if (range === undefined) throw new Error(`egress: bad built-in range ${cidr}`);
  return { range, kind };
}

/** Most specific first: the first range that contains an address decides its class. */
const ipv4Special: readonly SpecialRange[] = [
  special("255.255.255.255/32", "broadcast"),
  special("0.0.0.0/8", "unspecified"),
  special("10.0.0.0/8", "private"),
  special("100.64.0.0/10", "cgnat"),
  special("127.0.0.0/8", "loopback"),
  special("169.254.0.0/16", "link-local"),
  special("172.16.0.0/12", "private"),
  special("192.0.0.0/24", "reserved"),
  special("192.0.2.0/24", "documentation"),
  special("192.88.99.0/24", "reserved"),
  special("192.168.0.0/16", "private"),
  special("198.18.0.0/15", "reserved"),
  special("198.51.100.0/24", "documentation"),
  special("203.0.113.0/24", "documentation"),
  special("224.0.0.0/4", "multicast"),
  special("240.0.0.0/4", "reserved"),
];

const ipv6Special: readonly SpecialRange[] = [
  special("::/128", "unspecified"),
  special("::1/128", "loopback"),
  special("::/96", "reserved"), // deprecated IPv4-compatible addresses
  special("64:ff9b::/96", "embedded-v4"), // A2: NAT64 well-known prefix
  special("64:ff9b:1::/48", "private"), // local-use NAT64
  special("100::/64", "reserved"), // discard-only
  special("2001:db8::/32", "documentation"),
  special("2001::/23", "reserved"), // IETF protocol assignments, incl. Teredo
  special("2002::/16", "embedded-v4"), // A2: 6to4
  special("3fff::/20", "documentation"),
  special("fc00::/7", "private"), // unique local
  special("fe80::/10", "link-local"),
  special("fec0::/10", "private"), // deprecated site-local
  special("ff00::/8", "multicast"),
];

const globalUnicast = special("2000::/3", "public").range;

function classifyParsed(ip: ParsedIp): AddressClass {
  const table = ip.family === 4 ? ipv4Special : ipv6Special;
  for (const { range, kind } of table) {
    if (!rangeContains(range, ip)) continue;
    if (kind !== "embedded-v4") return kind;
    // A2: NAT64 keeps the IPv4 address in the last 32 bits, 6to4 in bits 16–48.
    const embedded = range.prefix === 96 ? ip.value & 0xffffffffn : (ip.value >> 80n) & 0xffffffffn;
    return classifyParsed({ family: 4, value: embedded });
  }
  if (ip.family === 6 && !rangeContains(globalUnicast, ip)) return "reserved"; // A3
  return "public";
}

/**
 * Classes no policy and no operator setting can open: the host itself (loopback, unspecified),
 * its link (link-local, incl. 169.254.169.254), and one-to-many addresses.
 */
export const unreachableClasses: ReadonlySet<AddressClass> = new Set([
  "loopback",
  "unspecified",
  "link-local",
  "multicast",
  "broadcast",
]);

/** Classes the operator may open for computers (ROOST_EGRESS_ALLOW_PRIVATE). */
export const operatorClasses: ReadonlySet<AddressClass> = new Set(["private", "cgnat"]);

/** Classify an address; text that is not an IP address is `reserved` (never public). */
export function classifyAddress(address: string): AddressClass {
  const parsed = parseIp(address);
  return parsed === undefined ? "reserved" : classifyParsed(parsed);
}

/** Whether every address of `inner` is in `outer`. */
export function rangeWithin(inner: IpRange, outer: IpRange): boolean {
  return (
    inner.family === outer.family &&
    inner.prefix >= outer.prefix &&
    (inner.network & mask(outer.family, outer.prefix)) === outer.network
  );
}

/** Whether the two ranges share an address. */
export function rangesOverlap(a: IpRange, b: IpRange): boolean {
  return rangeWithin(a, b) || rangeWithin(b, a);
}

/** A4: the class of the special range holding all of `range`; `public` when none does. */
export function classifyRange(range: IpRange): AddressClass {
  const table = range.family === 4 ? ipv4Special : ipv6Special;
  for (const { range: special, kind } of table) {
    if (!rangeWithin(range, special)) continue;
    if (kind !== "embedded-v4") return kind;
    // A2: NAT64 keeps the IPv4 part in the last 32 bits, 6to4 in bits 16–48.
    const embeddedBits = special.prefix === 96 ? 96 : 16;
    const shift = special.prefix === 96 ? 0n : 80n;
    const v4Prefix = Math.min(32, range.prefix - embeddedBits);
    const network = (range.network >> shift) & 0xffffffffn;
    return classifyRange({ family: 4, network: network & mask(4, v4Prefix), prefix: v4Prefix });
  }
  if (range.family === 6 && range.prefix >= 3 && !rangeWithin(range, globalUnicast))
    return "reserved"; // A3
  return "public";
}
