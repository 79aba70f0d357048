/**
 * Encryption at rest for secret values (docs/secrets.md, decision 0023).
 *
 * Invariants:
 *   SECR5 the key is kept apart from the store: `ROOST_SECRETS_KEY` (32 bytes, base64), or a key
 *         file `secrets-key` in the data dir made once with mode 0600 (and put back to 0600 when
 *         found wider); the store holds only ciphertext.
 *   SECR6 every value is sealed with AES-256-GCM under a fresh 12-byte nonce, with the row it
 *         belongs to (scope, owner, name) as associated data: a ciphertext copied to another row
 *         or altered fails to open instead of yielding a value.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmod, mkdir, open, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { ConfigError } from "../errors/index.ts";

const keyBytes = 32;
const nonceBytes = 12;
const tagBytes = 16;
/** Sealed values start with the format's version. */
const version = "v1";

export interface SecretCipher {
  seal(plaintext: string, row: string): string;
  open(sealed: string, row: string): string;
}

export function createSecretCipher(key: Buffer): SecretCipher {
  if (key.length !== keyBytes)
    throw new ConfigError(`the secrets key must be ${keyBytes} bytes (it is ${key.length})`);
  return {
    seal(plaintext, row) {
      const nonce = randomBytes(nonceBytes);
      const cipher = createCipheriv("aes-256-gcm", key, nonce);
      cipher.setAAD(Buffer.from(row, "utf8")); // SECR6
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return `${version}:${Buffer.concat([nonce, cipher.getAuthTag(), body]).toString("base64")}`;
    },
    open(sealed, row) {
      if (!sealed.startsWith(`${version}:`))
        throw new Error("a stored secret has an unknown format");
      const raw = Buffer.from(sealed.slice(version.length + 1), "base64");
      const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, nonceBytes));
      decipher.setAAD(Buffer.from(row, "utf8"));
      decipher.setAuthTag(raw.subarray(nonceBytes, nonceBytes + tagBytes));
      return Buffer.concat([
        decipher.update(raw.subarray(nonceBytes + tagBytes)),
        decipher.final(),
      ]).toString("utf8");
    },
  };
}

/** Reads `ROOST_SECRETS_KEY`'s value (base64 or base64url of 32 bytes). */
export function parseSecretsKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, /[-_]/.test(trimmed) ? "base64url" : "base64");
  if (key.length !== keyBytes || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed))
    throw new ConfigError(
      `ROOST_SECRETS_KEY must be ${keyBytes} random bytes in base64 (make one with: openssl rand -base64 32)`,
    );
  return key;
}

/** SECR5: the key given by the environment, or the data dir's key file (made on first use). */
export async function loadSecretsKey(options: {
  dataDir: string;
  key?: string | undefined;
}): Promise<Buffer> {
  if (options.key !== undefined) return parseSecretsKey(options.key);
  const file = path.join(options.dataDir, "secrets-key");
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  try {
    const handle = await open(file, "wx", 0o600);
    try {
      await handle.writeFile(randomBytes(keyBytes).toString("base64"));
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  if (((await stat(file)).mode & 0o077) !== 0) await chmod(file, 0o600);
  const text = await readFile(file, "utf8");
  try {
    return parseSecretsKey(text);
  } catch {
    throw new ConfigError(
      `${file} does not hold a ${keyBytes}-byte key in base64; restore it from a backup (secrets stored under it cannot be read without it)`,
    );
  }
}
