/**
 * Brokered secrets: what the vault swaps and redacts. Inside the computer a brokered secret's
 * variable holds only its placeholder, `roost-secret:NAME`; the egress proxy (through the vault,
 * vault.ts) puts the value in its place on the way out, and only towards the secret's hosts.
 *
 * Invariants:
 *   VLT1 A placeholder is replaced only in a request to a host its secret lists (exact name, or
 *      `*.example.com` for every subdomain); every other placeholder, and every request to any
 *      other host, goes out exactly as the computer wrote it.
 *   VLT2 Headers are swapped (the plain placeholder, and inside `Basic` credentials); the body
 *      only for a secret brokered with `body: true`. The request line (URL) never is.
 *   VLT3 What comes back from a brokered host passes a redactor before the computer sees it: the
 *      computer's brokered values, plain, base64 (standard and URL-safe, alone or at any offset
 *      inside a longer base64 text) and URL-encoded, become `[REDACTED]`, in headers and across
 *      body chunk boundaries.
 */
import { Transform, type TransformCallback } from "node:stream";

/** One secret the vault may swap in for a computer. */
export interface BrokeredSecret {
  /** `[A-Z][A-Z0-9_]*`, as in the secret's API. */
  name: string;
  /** The real value; it never leaves the server except towards `hosts`. */
  value: string;
  /** Host names (`api.example.com`) or wildcards (`*.example.com`) the value may be sent to. */
  hosts: readonly string[];
  /** Swap the placeholder in request bodies too (buffered, at most 1 MiB). @default false */
  body?: boolean;
  /** The secret owner's account, for the audit row of each swap. @default none (null in the row) */
  accountId?: string;
}

/**
 * Where the vault reads a computer's brokered secrets from (the secrets store implements it;
 * `testing/` has a fixed one). Called once per plain request and per CONNECT, so a secret
 * deleted or changed applies to the next request.
 */
export interface BrokeredSecrets {
  forComputer(computerId: string): Promise<readonly BrokeredSecret[]>;
}

export const placeholderPrefix = "roost-secret:";
export const redactedText = "[REDACTED]";
const placeholderPattern = /roost-secret:([A-Z][A-Z0-9_]*)/g;

/** The placeholder a brokered secret's variable holds inside the computer. */
export function placeholderFor(name: string): string {
  return `${placeholderPrefix}${name}`;
}

/** The environment a computer gets for its brokered secrets: each name → its placeholder. */
export function brokeredEnvironment(secrets: readonly { name: string }[]): Record<string, string> {
  return Object.fromEntries(secrets.map((secret) => [secret.name, placeholderFor(secret.name)]));
}

function canonicalHost(host: string): string {
  return host.trim().toLowerCase().replace(/\.$/, "");
}

/** VLT1: whether `host` is one of `patterns` (exact, or `*.domain` for subdomains at any depth). */
export function hostAllowed(patterns: readonly string[], host: string): boolean {
  const wanted = canonicalHost(host);
  return patterns.some((pattern) => {
    const canonical = canonicalHost(pattern);
    if (canonical.startsWith("*.")) return wanted.endsWith(canonical.slice(1));
    return canonical === wanted;
  });
}

const hostLabel = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Validates a secret's `broker.hosts` (for the secrets API): 1–20 host names, ASCII (punycode),
 * or `*.` wildcards with at least two labels after them. Returns the canonical list, or the
 * problems found, each saying how to fix it.
 */
export function parseBrokerHosts(
  input: unknown,
): { ok: true; hosts: string[] } | { ok: false; issues: string[] } {
  if (!Array.isArray(input) || input.length === 0 || input.length > 20) {
    return {
      ok: false,
      issues: ['broker.hosts: give 1 to 20 host names, as in ["api.example.com"]'],
    };
  }
  const issues: string[] = [];
  const hosts: string[] = [];
  input.forEach((entry: unknown, index) => {
    const text = typeof entry === "string" ? canonicalHost(entry) : "";
    const bare = text.startsWith("*.") ? text.slice(2) : text;
    const labels = bare.split(".");
    const valid =
      text.length > 0 &&
      text.length <= 253 &&
      labels.every((label) => hostLabel.test(label)) &&
      !/^[0-9.]+$/.test(bare) &&
      (text.startsWith("*.") ? labels.length >= 2 : labels.length >= 1);
    if (!valid) {
      issues.push(
        `broker.hosts[${index}]: ${JSON.stringify(entry)} is not a host name; write "api.example.com" or "*.example.com" (no scheme, port or path)`,
      );
    } else hosts.push(text);
  });
  return issues.length > 0 ? { ok: false, issues } : { ok: true, hosts: [...new Set(hosts)] };
}

/** Replaces the placeholders of `values` (name → value) in `text`; records the names used. */
export function swapPlaceholders(
  text: string,
  values: ReadonlyMap<string, string>,
  used: Set<string>,
): string {
  if (!text.includes(placeholderPrefix)) return text;
  return text.replace(placeholderPattern, (whole, name: string) => {
    const value = values.get(name);
    if (value === undefined) return whole; // VLT1
    used.add(name);
    return value;
  });
}

/** VLT2: one header value, with `Basic` credentials decoded, swapped and encoded again. */
function swapHeaderValue(
  name: string,
  value: string,
  values: ReadonlyMap<string, string>,
  used: Set<string>,
): string {
  const swapped = swapPlaceholders(value, values, used);
  const lower = name.toLowerCase();
  if (lower !== "authorization") return swapped;
  const basic = /^(\s*basic\s+)([A-Za-z0-9+/=]+)\s*$/i.exec(swapped);
  if (basic === null) return swapped;
  const decoded = Buffer.from(basic[2] ?? "", "base64").toString("utf8");
  const inner = swapPlaceholders(decoded, values, used);
  return inner === decoded
    ? swapped
    : `${basic[1] ?? "Basic "}${Buffer.from(inner, "utf8").toString("base64")}`;
}

/** VLT2: raw headers (name, value, name, value…) with placeholders swapped. */
export function swapHeaders(
  rawHeaders: readonly string[],
  values: ReadonlyMap<string, string>,
  used: Set<string>,
): string[] {
  const out: string[] = [];
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    const name = rawHeaders[index] ?? "";
    out.push(name, swapHeaderValue(name, rawHeaders[index + 1] ?? "", values, used));
  }
  return out;
}

/** VLT3: the byte patterns that give a value away: plain, base64 (both alphabets), URL-encoded. */
export function redactionPatterns(values: readonly string[]): Buffer[] {
  const patterns = new Map<string, Buffer>();
  const add = (text: string) => {
    if (text.length >= 4) patterns.set(text, Buffer.from(text, "utf8"));
  };
  for (const value of values) {
    add(value);
    const bytes = Buffer.from(value, "utf8");
    for (const alphabet of ["base64", "base64url"] as const) {
      add(bytes.toString(alphabet));
      // Inside a longer base64 text (`Basic` credentials, "Bearer <value>" encoded) the value
      // starts at one of three byte offsets; each gives a fixed run of characters between the
      // groups it shares with its neighbours.
      for (let offset = 0; offset < 3; offset += 1) {
        const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString(alphabet);
        const start = 4 * Math.ceil(offset / 3);
        const end = 4 * Math.floor((offset + bytes.length) / 3);
        if (end - start >= 8) add(encoded.slice(start, end));
      }
    }
    add(encodeURIComponent(value));
  }
  // Longest first, so a value that contains another is redacted whole.
  return [...patterns.values()].sort((left, right) => right.length - left.length);
}

/** VLT3: `text` with every pattern replaced, then through `redact` (the secrets redactor). */
export function redactText(
  text: string,
  patterns: readonly Buffer[],
  redact: (text: string) => string = (input) => input,
): string {
  let out = text;
  for (const pattern of patterns) out = out.split(pattern.toString("utf8")).join(redactedText);
  return redact(out);
}

/**
 * VLT3: a stream that replaces every pattern with `[REDACTED]`, including one split across
 * chunks: it holds back the last (longest pattern − 1) bytes until the next chunk or the end.
 */
export function createRedactingStream(patterns: readonly Buffer[]): Transform {
  const longest = patterns.reduce((size, pattern) => Math.max(size, pattern.length), 0);
  const replacement = Buffer.from(redactedText, "utf8");
  let carry = Buffer.alloc(0);
  const scan = (buffer: Buffer, final: boolean): Buffer => {
    const pieces: Buffer[] = [];
    let position = 0;
    for (;;) {
      let best = -1;
      let bestPattern: Buffer | undefined;
      for (const pattern of patterns) {
        const found = buffer.indexOf(pattern, position);
        if (found !== -1 && (best === -1 || found < best)) {
          best = found;
          bestPattern = pattern;
        }
      }
      if (bestPattern === undefined) break;
      // A longer pattern may still complete at the same place (padded base64): decide later.
      if (!final && best + longest > buffer.length) {
        pieces.push(buffer.subarray(position, best));
        carry = Buffer.from(buffer.subarray(best));
        return Buffer.concat(pieces);
      }
      pieces.push(buffer.subarray(position, best), replacement);
      position = best + bestPattern.length;
    }
    const keep = final ? buffer.length : Math.max(position, buffer.length - (longest - 1));
    pieces.push(buffer.subarray(position, keep));
    carry = Buffer.from(buffer.subarray(keep));
    return Buffer.concat(pieces);
  };
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      if (longest === 0) return callback(null, chunk);
      const out = scan(Buffer.concat([carry, chunk]), false);
      callback(null, out.length > 0 ? out : undefined);
    },
    flush(callback: TransformCallback) {
      const out = scan(carry, true);
      callback(null, out.length > 0 ? out : undefined);
    },
  });
}
