/**
 * Signed tokens of the port previews' browser links, and the host names previews are served on.
 *
 * A browser link (`POST /v1/computers/me/preview-links`) opens a preview on a host of its own,
 * `p<port>-<label>.<preview domain>`, so that a page from a computer is never same-origin with
 * Roost's web app, with another port, or with another user's preview
 * (docs/decisions/0016-port-previews.md). The link carries a short-lived `link` token; its first
 * use trades it for a `session` token in an HttpOnly cookie of that host.
 *
 * Invariants:
 *   PVT1 A token is `v1.<claims>.<HMAC-SHA256(secret, "v1." + claims)>` (base64url), the claims
 *        naming its kind, computer, account, port and expiry; anything whose signature is not
 *        exactly that text (a constant-time comparison) is no token at all.
 *   PVT2 A token is good only for its own kind, its own computer's own port on that computer's
 *        own host, and only before it expires.
 *   PVT3 A host label is derived from the secret and the computer id, so it names the computer
 *        without showing its id, and cannot be made for a computer by anyone without the secret.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { chmod, mkdir, open, readFile } from "node:fs/promises";
import path from "node:path";

export type PreviewTokenKind = "link" | "session";

export interface PreviewClaims {
  kind: PreviewTokenKind;
  computerId: string;
  accountId: string;
  port: number;
  /** Epoch ms. */
  expiresAt: number;
}

export interface PreviewSigner {
  sign(claims: PreviewClaims): string;
  /** PVT1/PVT2: the claims of a valid, unexpired token of `kind`, or undefined. */
  verify(token: string, kind: PreviewTokenKind, now: number): PreviewClaims | undefined;
  /** PVT3: the first label of the computer's preview host for `port`, e.g. `p8000-k3…`. */
  hostLabel(computerId: string, port: number): string;
}

/** `p<port>-<16 base32>`: what `hostLabel` makes. */
export const previewLabelPattern = /^p([1-9][0-9]{0,4})-([a-z2-7]{16})$/;

const base32Alphabet = "abcdefghijklmnopqrstuvwxyz234567";

function base32(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += base32Alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += base32Alphabet[(value << (5 - bits)) & 31];
  return out;
}

export function createPreviewSigner(secret: Buffer): PreviewSigner {
  if (secret.length < 32) throw new Error("the preview secret must be at least 32 bytes");
  const mac = (text: string) => createHmac("sha256", secret).update(text).digest();
  return {
    sign(claims) {
      const body = Buffer.from(
        JSON.stringify({
          k: claims.kind,
          c: claims.computerId,
          a: claims.accountId,
          p: claims.port,
          e: claims.expiresAt,
        }),
      ).toString("base64url");
      return `v1.${body}.${mac(`v1.${body}`).toString("base64url")}`;
    },
    verify(token, kind, now) {
      const parts = token.split(".");
      if (parts.length !== 3 || parts[0] !== "v1" || token.length > 2048) return undefined;
      const [, body = "", signature = ""] = parts;
      // The signature's text is compared, not its decoding: base64 has spellings that decode
      // alike (the last character's spare bits), and a token has exactly one.
      const expected = Buffer.from(mac(`v1.${body}`).toString("base64url"));
      const given = Buffer.from(signature);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined; // PVT1
      let raw: unknown;
      try {
        raw = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
      } catch {
        return undefined;
      }
      if (typeof raw !== "object" || raw === null) return undefined;
      const { k, c, a, p, e } = raw as Record<string, unknown>;
      if (
        k !== kind ||
        typeof c !== "string" ||
        typeof a !== "string" ||
        typeof p !== "number" ||
        !Number.isInteger(p) ||
        typeof e !== "number"
      )
        return undefined;
      if (e <= now) return undefined; // PVT2
      return { kind, computerId: c, accountId: a, port: p, expiresAt: e };
    },
    hostLabel(computerId, port) {
      return `p${port}-${base32(mac(`host\0${computerId}`)).slice(0, 16)}`; // PVT3
    },
  };
}

/**
 * The server's preview secret: 32 random bytes in `<dataDir>/preview-secret` (0600), made on
 * first start. Every node that serves previews of the same computers needs the same file.
 */
export async function loadPreviewSecret(dataDir: string): Promise<Buffer> {
  const file = path.join(dataDir, "preview-secret");
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  try {
    const handle = await open(file, "wx", 0o600);
    try {
      await handle.writeFile(randomBytes(32).toString("base64url"));
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  await chmod(file, 0o600);
  const secret = Buffer.from((await readFile(file, "utf8")).trim(), "base64url");
  if (secret.length < 32)
    throw new Error(
      `${file} holds fewer than 32 bytes of secret; remove it and restart (a new one is made, and links made before stop working)`,
    );
  return secret;
}
