import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createPreviewSigner, loadPreviewSecret, previewLabelPattern } from "./preview-tokens.ts";

const claims = {
  kind: "link" as const,
  computerId: "cmp_A1b2C3d4E5f6G7h8",
  accountId: "acc_1",
  port: 8000,
  expiresAt: 2_000,
};

describe("preview tokens", () => {
  const signer = createPreviewSigner(randomBytes(32));

  it("a token verifies for its own kind until it expires, and gives back its claims", () => {
    const token = signer.sign(claims);
    expect(signer.verify(token, "link", 1_999)).toEqual(claims);
    expect(signer.verify(token, "link", 2_000)).toBeUndefined(); // expired
    expect(signer.verify(token, "session", 1_000)).toBeUndefined(); // another kind
  });

  it("tampered claims, a tampered signature, another server's secret or garbage do not verify", () => {
    const token = signer.sign(claims);
    const [version, body, signature] = token.split(".") as [string, string, string];
    const forged = Buffer.from(
      Buffer.from(body, "base64url").toString().replace('"p":8000', '"p":8001'),
    ).toString("base64url");
    expect(signer.verify(`${version}.${forged}.${signature}`, "link", 0)).toBeUndefined();
    // Every other last character, those that decode to the same bytes (base64's spare bits) too.
    for (const last of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") {
      if (last === signature.at(-1)) continue;
      const flipped = `${signature.slice(0, -1)}${last}`;
      expect(signer.verify(`${version}.${body}.${flipped}`, "link", 0), last).toBeUndefined();
    }
    expect(createPreviewSigner(randomBytes(32)).verify(token, "link", 0)).toBeUndefined();
    for (const junk of ["", "v1", "v1..", "v2.a.b", `${token}.x`, "x".repeat(5000)])
      expect(signer.verify(junk, "link", 0)).toBeUndefined();
  });

  it("host labels: one per computer and port, DNS-safe, not the computer id, and the secret's own", () => {
    const label = signer.hostLabel(claims.computerId, 8000);
    expect(label).toMatch(previewLabelPattern);
    expect(label.startsWith("p8000-")).toBe(true);
    expect(label).not.toContain(claims.computerId.toLowerCase().slice(4));
    expect(signer.hostLabel(claims.computerId, 8000)).toBe(label);
    // Another port of the same computer: another host (another origin), the same computer part.
    expect(signer.hostLabel(claims.computerId, 8001)).toBe(label.replace("p8000-", "p8001-"));
    expect(signer.hostLabel("cmp_other", 8000)).not.toBe(label);
    expect(createPreviewSigner(randomBytes(32)).hostLabel(claims.computerId, 8000)).not.toBe(label);
  });

  it("the secret file is made once with mode 0600 and kept; a short one stops start-up", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-preview-secret-"));
    try {
      const first = await loadPreviewSecret(dir);
      const file = join(dir, "preview-secret");
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(first.length).toBe(32);
      expect((await loadPreviewSecret(dir)).equals(first)).toBe(true);
      expect(readFileSync(file, "utf8")).not.toBe("");
      writeFileSync(file, "short");
      await expect(loadPreviewSecret(dir)).rejects.toThrow(/fewer than 32 bytes/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
