import { randomBytes, randomInt } from "node:crypto";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  brokeredEnvironment,
  createRedactingStream,
  hostAllowed,
  parseBrokerHosts,
  placeholderFor,
  redactionPatterns,
  swapHeaders,
} from "./broker.ts";

async function through(chunks: Buffer[], patterns: Buffer[]): Promise<string> {
  const out: Buffer[] = [];
  for await (const chunk of Readable.from(chunks).pipe(createRedactingStream(patterns)))
    out.push(chunk as Buffer);
  return Buffer.concat(out).toString("utf8");
}

describe("VLT1 hosts", () => {
  it("matches exact names and *.domain subdomains, case- and trailing-dot-insensitively", () => {
    expect(hostAllowed(["api.example.com"], "API.example.com.")).toBe(true);
    expect(hostAllowed(["api.example.com"], "example.com")).toBe(false);
    expect(hostAllowed(["api.example.com"], "api.example.com.evil.test")).toBe(false);
    expect(hostAllowed(["*.example.com"], "a.b.example.com")).toBe(true);
    expect(hostAllowed(["*.example.com"], "example.com")).toBe(false);
    expect(hostAllowed(["*.example.com"], "badexample.com")).toBe(false);
  });

  it("bad broker.hosts input is refused with a message saying how to fix it", () => {
    for (const input of [[], "api.example.com", Array(21).fill("a.com"), null]) {
      expect(parseBrokerHosts(input)).toEqual({
        ok: false,
        issues: [expect.stringContaining("1 to 20")],
      });
    }
    const result = parseBrokerHosts([
      "https://api.example.com",
      "a.com:443",
      "*",
      "*.com",
      "1.2.3.4",
      "ok.example.com",
      7,
    ]);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.issues).toHaveLength(6);
      expect(result.issues[0]).toMatch(/broker\.hosts\[0\]: .* write "api\.example\.com"/);
    }
    expect(parseBrokerHosts(["API.example.com", "*.Example.com", "api.example.com"])).toEqual({
      ok: true,
      hosts: ["api.example.com", "*.example.com"],
    });
  });
});

describe("VLT2 swapping", () => {
  it("swaps only the placeholders of the given names, and a longer name is not a shorter one's", () => {
    const used = new Set<string>();
    const values = new Map([["TOKEN", "value-1234"]]);
    const out = swapHeaders(
      [
        "Authorization",
        `Bearer ${placeholderFor("TOKEN")}`,
        "X-A",
        `${placeholderFor("TOKEN_2")} ${placeholderFor("OTHER")}`,
      ],
      values,
      used,
    );
    expect(out).toEqual([
      "Authorization",
      "Bearer value-1234",
      "X-A",
      `${placeholderFor("TOKEN_2")} ${placeholderFor("OTHER")}`,
    ]);
    expect([...used]).toEqual(["TOKEN"]);
  });

  it("the computer's environment holds placeholders only", () => {
    expect(brokeredEnvironment([{ name: "API_TOKEN" }])).toEqual({
      API_TOKEN: "roost-secret:API_TOKEN",
    });
  });
});

describe("VLT3 redaction fuzz: values split across chunks, at chunk ends, in every encoding", () => {
  it("never lets a value through, whatever the chunking", async () => {
    for (let round = 0; round < 200; round += 1) {
      const value = randomBytes(randomInt(8, 40)).toString(round % 2 === 0 ? "hex" : "base64");
      const encodings = [
        value,
        Buffer.from(value).toString("base64"),
        Buffer.from(value).toString("base64url"),
        encodeURIComponent(value),
      ];
      const pieces: string[] = [];
      for (let index = 0; index < 6; index += 1) {
        pieces.push(randomBytes(randomInt(0, 30)).toString("hex"));
        pieces.push(encodings[randomInt(0, encodings.length)] ?? value);
      }
      const text = Buffer.from(pieces.join(""));
      const chunks: Buffer[] = [];
      for (let at = 0; at < text.length;) {
        const size = randomInt(1, 12);
        chunks.push(text.subarray(at, at + size));
        at += size;
      }
      const out = await through(chunks, redactionPatterns([value]));
      for (const encoded of encodings) expect(out).not.toContain(encoded);
      expect(out.split("[REDACTED]").length - 1).toBe(6);
    }
  });

  it("a value inside a longer base64 text is redacted at every offset (Basic credentials)", async () => {
    const value = "sk-0123456789abcdef";
    for (const prefix of ["", "u:", "us:", "use:", "Bearer "]) {
      for (const alphabet of ["base64", "base64url"] as const) {
        const encoded = Buffer.from(`${prefix}${value}!tail`).toString(alphabet);
        const out = await through([Buffer.from(encoded)], redactionPatterns([value]));
        expect(out).toContain("[REDACTED]");
        const rest = out.split("[REDACTED]").join("");
        // What is left cannot be decoded back into the value.
        expect(Buffer.from(rest, alphabet).toString("latin1")).not.toContain(value.slice(0, 8));
      }
    }
  });

  it("a value at the very end of the stream (the last, short chunk) is redacted", async () => {
    const value = "abcdefgh12345678";
    expect(
      await through(
        [Buffer.from("x".repeat(100) + value.slice(0, 3)), Buffer.from(value.slice(3))],
        redactionPatterns([value]),
      ),
    ).toBe(`${"x".repeat(100)}[REDACTED]`);
  });

  it("a partial value at the end is passed on unchanged (nothing is lost)", async () => {
    const value = "abcdefgh12345678";
    expect(await through([Buffer.from("tail abcdefgh")], redactionPatterns([value]))).toBe(
      "tail abcdefgh",
    );
  });
});
