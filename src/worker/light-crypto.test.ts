import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { seededRandom } from "../../test/support/random.ts";
import { randomBytes, randomFill, sha1, sha256 } from "./light-crypto.ts";

/** Every length up to three blocks (each padding edge: 55, 56, 63, 64, 119, 120…), then longer. */
const lengths = [...Array.from({ length: 200 }, (_, index) => index), 1000, 4096, 65_537];

function bytesOf(length: number, random: () => number): Buffer {
  const bytes = Buffer.allocUnsafe(length);
  for (let index = 0; index < length; index++) bytes[index] = Math.floor(random() * 256);
  return bytes;
}

describe("light-crypto", () => {
  it("LC1: sha1 and sha256 give node:crypto's digests for bytes of every length", () => {
    const random = seededRandom(9);
    for (const length of lengths) {
      const bytes = bytesOf(length, random);
      expect(sha1(bytes).toString("hex"), `sha1 of ${length} bytes`).toBe(
        createHash("sha1").update(bytes).digest("hex"),
      );
      expect(sha256(bytes).toString("hex"), `sha256 of ${length} bytes`).toBe(
        createHash("sha256").update(bytes).digest("hex"),
      );
    }
  });

  it("LC1: strings are hashed as UTF-8, as node:crypto hashes them", () => {
    const samples = [
      "",
      "abc",
      "call_8f718b711f9fc56b4d98a188",
      "dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11",
      "é ☃ 𝄞 日本語",
      "\u0000\uffff",
    ];
    for (const text of samples) {
      expect(sha1(text).toString("base64")).toBe(createHash("sha1").update(text).digest("base64"));
      expect(sha256(text).toString("hex")).toBe(createHash("sha256").update(text).digest("hex"));
    }
    // RFC 6455's example: the accept value for its sample key.
    expect(
      sha1("dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11").toString("base64"),
    ).toBe("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  });

  it("LC2: random bytes differ from call to call and across the pool's refills", () => {
    const seen = new Set<string>();
    // 4 KiB pool: 2,000 draws of 16 bytes go through several refills.
    for (let index = 0; index < 2000; index++) seen.add(randomBytes(16).toString("hex"));
    expect(seen.size).toBe(2000);
    const large = randomFill(new Uint8Array(10_000));
    const counts = new Array<number>(256).fill(0);
    for (const byte of large) counts[byte]! += 1;
    // Every byte value turns up in 10,000 random bytes (each is missing with odds ~1e-17).
    expect(counts.every((count) => count > 0)).toBe(true);
    expect(randomBytes(0)).toHaveLength(0);
  });
});
