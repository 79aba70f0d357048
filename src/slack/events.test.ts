/** Slack's request signature (SLK6) and the leading mention (SLK10). */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  maxSignatureSkewMs,
  newConfirmCode,
  stripLeadingMention,
  verifySignature,
} from "./events.ts";

const secret = "8f742231b10e8888abcd99yyyzzz85a5".replace(/[yz]/g, "0");
const sign = (body: string, timestamp: number, key = secret) =>
  `v0=${createHmac("sha256", key).update(`v0:${timestamp}:${body}`).digest("hex")}`;

describe("verifySignature (SLK6)", () => {
  const now = 1_764_590_000_000;
  const timestamp = now / 1000;
  const body = '{"type":"event_callback"}';
  const check = (overrides: Partial<Parameters<typeof verifySignature>[0]>) =>
    verifySignature({
      signingSecret: secret,
      body,
      signature: sign(body, timestamp),
      timestamp: String(timestamp),
      nowMs: now,
      ...overrides,
    });

  it("accepts Slack's v0 signature of the exact body", () => {
    expect(check({})).toBe(true);
  });
  it("refuses another secret, another body, a missing header, another version", () => {
    expect(check({ signature: sign(body, timestamp, "00".repeat(16)) })).toBe(false);
    expect(check({ body: `${body} ` })).toBe(false);
    expect(check({ signature: undefined })).toBe(false);
    expect(check({ timestamp: undefined })).toBe(false);
    expect(check({ signature: sign(body, timestamp).replace("v0=", "v1=") })).toBe(false);
    expect(check({ timestamp: "1e9" })).toBe(false);
  });
  it("refuses a timestamp more than five minutes away, in the past or the future", () => {
    for (const skew of [-maxSignatureSkewMs - 1000, maxSignatureSkewMs + 1000]) {
      const at = (now + skew) / 1000;
      expect(check({ timestamp: String(at), signature: sign(body, at) })).toBe(false);
    }
    const near = (now - 60_000) / 1000;
    expect(check({ timestamp: String(near), signature: sign(body, near) })).toBe(true);
  });
});

describe("stripLeadingMention (SLK10)", () => {
  it("strips only the bot's own leading mention", () => {
    expect(stripLeadingMention("<@UBOT> $ ls", "UBOT")).toBe("$ ls");
    expect(stripLeadingMention("  <@UBOT|roost>: hi", "UBOT")).toBe("hi");
    expect(stripLeadingMention("<@UOTHER> hi", "UBOT")).toBe("<@UOTHER> hi");
    expect(stripLeadingMention("hi <@UBOT>", "UBOT")).toBe("hi <@UBOT>");
  });
});

describe("newConfirmCode (SLST3)", () => {
  it("is ten characters of an unambiguous alphabet, different each time", () => {
    const codes = new Set(Array.from({ length: 200 }, () => newConfirmCode()));
    expect(codes.size).toBe(200);
    for (const code of codes) expect(code).toMatch(/^[A-HJ-NP-Z2-9]{10}$/);
  });
});
