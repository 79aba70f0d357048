/**
 * Restate's request identity (v1): the engine signs every request it sends to a service
 * endpoint with an ed25519 key, and the endpoint accepts only requests signed by the keys it is
 * given (the SDK's `identityKeys`). Without it, anyone who can reach the loop's service endpoint
 * can run its handlers: on the embedded engine, any other user of the host, through 127.0.0.1.
 *
 * Invariants:
 *   RI1 the embedded engine always signs: its key is made once, in the data dir (0600), and the
 *       endpoint accepts that key only.
 *   RI2 public keys are in Restate's own format, `publickeyv1_` + base58 of the raw 32 bytes,
 *       the one restate-server logs at start and the SDK parses.
 */
import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

export interface RequestIdentity {
  /** The private key, PKCS#8 PEM, for restate-server's `request-identity-private-key-pem-file`. */
  privateKeyPemFile: string;
  /** The matching public key for the endpoint's `identityKeys` (RI2). */
  publicKey: string;
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Bitcoin-alphabet base58, as Restate's key format uses. */
export function base58(bytes: Uint8Array): string {
  let value = 0n;
  for (const byte of bytes) value = value * 256n + BigInt(byte);
  let text = "";
  while (value > 0n) {
    text = base58Alphabet[Number(value % 58n)]! + text;
    value /= 58n;
  }
  for (const byte of bytes) {
    if (byte !== 0) break;
    text = `1${text}`;
  }
  return text;
}

/** RI2: the `publickeyv1_…` form of an ed25519 key given as PEM (private or public). */
export function restatePublicKey(pem: string): string {
  const jwk = createPublicKey(pem).export({ format: "jwk" });
  if (jwk.crv !== "Ed25519" || typeof jwk.x !== "string")
    throw new Error("a Restate request identity key must be an ed25519 key");
  return `publickeyv1_${base58(Buffer.from(jwk.x, "base64url"))}`;
}

/** RI1: the embedded engine's signing key, made on first use and kept in `dir`. */
export async function ensureRequestIdentity(dir: string): Promise<RequestIdentity> {
  const privateKeyPemFile = join(dir, "request-identity.pem");
  let pem: string;
  try {
    pem = await readFile(privateKeyPemFile, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    const { privateKey } = generateKeyPairSync("ed25519");
    pem = privateKey.export({ format: "pem", type: "pkcs8" }).toString();
    await writeFile(privateKeyPemFile, pem, { mode: 0o600, flag: "wx" }).catch(
      async (writeError: NodeJS.ErrnoException) => {
        if (writeError.code !== "EEXIST") throw writeError;
        pem = await readFile(privateKeyPemFile, "utf8"); // another start made it first
      },
    );
  }
  await chmod(privateKeyPemFile, 0o600);
  return { privateKeyPemFile, publicKey: restatePublicKey(pem) };
}
