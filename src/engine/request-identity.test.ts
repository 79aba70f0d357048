import { statSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { base58, ensureRequestIdentity, restatePublicKey } from "./request-identity.ts";
import { makeTempDir } from "./testing/index.ts";

describe("request identity", () => {
  test("base58 uses the Bitcoin alphabet and keeps leading zero bytes as 1s", () => {
    expect(base58(Buffer.from("hello world"))).toBe("StV1DL6CwTryKyV");
    expect(base58(Uint8Array.from([0, 0, 1]))).toBe("112");
  });

  test("the key is made once, kept 0600, and read back the same (RI1, RI2)", async () => {
    const dir = await makeTempDir();
    try {
      const first = await ensureRequestIdentity(dir.path);
      const [second, third] = await Promise.all([
        ensureRequestIdentity(dir.path),
        ensureRequestIdentity(dir.path),
      ]);
      expect(first.publicKey).toMatch(/^publickeyv1_[1-9A-HJ-NP-Za-km-z]{43,44}$/);
      expect(second).toEqual(first);
      expect(third).toEqual(first);
      expect(statSync(first.privateKeyPemFile).mode & 0o777).toBe(0o600);
    } finally {
      await dir.remove();
    }
  });

  test("a key that is not ed25519 is refused with a clear message", async () => {
    const { generateKeyPairSync } = await import("node:crypto");
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    expect(() =>
      restatePublicKey(privateKey.export({ format: "pem", type: "pkcs8" }).toString()),
    ).toThrow(/must be an ed25519 key/);
  });
});
