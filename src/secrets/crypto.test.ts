/** Sealing and the key (crypto.ts, SECR5–SECR6): the key file's mode, bad keys, tampering. */
import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSecretCipher, loadSecretsKey, parseSecretsKey } from "./crypto.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-secrets-key-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("SECR5 the key", () => {
  it("is made once as a 0600 file, the same on every load, and put back to 0600 when wider", async () => {
    const first = await loadSecretsKey({ dataDir: dir });
    const file = join(dir, "secrets-key");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    await chmod(file, 0o644);
    expect(await loadSecretsKey({ dataDir: dir })).toEqual(first);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it("ROOST_SECRETS_KEY wins over the file, and makes none", async () => {
    const key = randomBytes(32);
    expect(await loadSecretsKey({ dataDir: dir, key: key.toString("base64") })).toEqual(key);
    await expect(stat(join(dir, "secrets-key"))).rejects.toThrow();
  });

  it("a bad key stops start-up with how to fix it", async () => {
    for (const bad of ["short", randomBytes(16).toString("base64"), "!".repeat(44)])
      expect(() => parseSecretsKey(bad)).toThrow(/openssl rand -base64 32/);
    await writeFile(join(dir, "secrets-key"), "garbage", { mode: 0o600 });
    await expect(loadSecretsKey({ dataDir: dir })).rejects.toThrow(/restore it from a backup/);
    expect(await readFile(join(dir, "secrets-key"), "utf8")).toBe("garbage"); // never replaced
  });
});

describe("SECR6 sealing", () => {
  const cipher = createSecretCipher(randomBytes(32));
  it("opens what it sealed, under the same row only; fresh nonce each time", () => {
    const sealed = cipher.seal("a-secret-value", "bot:b1:KEY");
    expect(sealed).not.toContain("a-secret-value");
    expect(cipher.seal("a-secret-value", "bot:b1:KEY")).not.toBe(sealed);
    expect(cipher.open(sealed, "bot:b1:KEY")).toBe("a-secret-value");
    expect(() => cipher.open(sealed, "bot:b2:KEY")).toThrow();
  });
  it("a tampered ciphertext or another key does not open", () => {
    const sealed = cipher.seal("a-secret-value", "row");
    const raw = Buffer.from(sealed.slice(3), "base64");
    raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
    expect(() => cipher.open(`v1:${raw.toString("base64")}`, "row")).toThrow();
    expect(() => createSecretCipher(randomBytes(32)).open(sealed, "row")).toThrow();
  });
});
