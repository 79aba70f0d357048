import { spawnSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync, mkdirSync } from "node:fs";
import { isIP } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createVaultAuthority } from "./authority.ts";
import { createCertificateAuthority, issueServerCertificate } from "./x509.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "roost-vault-ca-"));
  dirs.push(dir);
  return dir;
}

describe("X509V1 certificates", () => {
  it("a leaf verifies against its CA under OpenSSL's strict checks, for names and IP addresses", () => {
    const dir = tempDir();
    const ca = createCertificateAuthority({ commonName: "test" });
    writeFileSync(path.join(dir, "ca.pem"), ca.certPem);
    for (const host of ["api.example.com", "10.1.2.3", "fd00::1"]) {
      const leaf = issueServerCertificate({ ca, host });
      writeFileSync(path.join(dir, "leaf.pem"), leaf.certPem);
      const result = spawnSync(
        "openssl",
        [
          "verify",
          "-x509_strict",
          "-purpose",
          "sslserver",
          "-CAfile",
          path.join(dir, "ca.pem"),
          path.join(dir, "leaf.pem"),
        ],
        { encoding: "utf8" },
      );
      expect(result.stdout + result.stderr).toContain(": OK");
      const parsed = new X509Certificate(leaf.certPem);
      if (isIP(host) === 0) expect(parsed.checkHost(host)).toBe(host);
      else expect(parsed.checkIP(host)).toBe(host);
      expect(parsed.ca).toBe(false);
    }
    expect(new X509Certificate(ca.certPem).ca).toBe(true);
  });
});

describe("VCA per-computer authorities", () => {
  it("VCA1: the key is 0600 in a 0700 folder; the computer is given only the certificate", async () => {
    const dir = tempDir();
    const authority = createVaultAuthority({ dir });
    const trust = await authority.trustFor("cmp_a");
    expect(statSync(path.join(dir, "cmp_a", "ca-key.pem")).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(dir, "cmp_a")).mode & 0o777).toBe(0o700);
    expect(trust.caPem).toContain("BEGIN CERTIFICATE");
    expect(trust.caPem + trust.bundlePem).not.toContain("PRIVATE KEY");
    expect(trust.bundlePem.endsWith(trust.caPem)).toBe(true);
    expect(trust.bundlePem.split("BEGIN CERTIFICATE").length).toBeGreaterThan(100); // the public roots too
  });

  it("VCA3: the same CA after a restart, and concurrent first uses make one CA", async () => {
    const dir = tempDir();
    const first = createVaultAuthority({ dir });
    const many = await Promise.all(Array.from({ length: 10 }, () => first.trustFor("cmp_a")));
    expect(new Set(many.map((trust) => trust.caPem)).size).toBe(1);
    const restarted = createVaultAuthority({ dir });
    expect((await restarted.trustFor("cmp_a")).caPem).toBe(many[0]?.caPem);
    expect((await restarted.trustFor("cmp_b")).caPem).not.toBe(many[0]?.caPem);
  });

  it("VCA2: a computer id that could leave the folder is refused", async () => {
    const authority = createVaultAuthority({ dir: tempDir() });
    for (const id of ["../x", "a/b", "", ".", "cmp a"]) {
      await expect(authority.trustFor(id)).rejects.toThrow(/is not a computer id/);
    }
  });

  it("VCA2: a symlink planted where the key goes is not followed", async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, "cmp_a"), { recursive: true });
    const elsewhere = path.join(tempDir(), "stolen.pem");
    writeFileSync(elsewhere, "not a key");
    symlinkSync(elsewhere, path.join(dir, "cmp_a", "ca-key.pem"));
    writeFileSync(path.join(dir, "cmp_a", "ca.pem"), "x");
    const authority = createVaultAuthority({ dir });
    await expect(authority.trustFor("cmp_a")).rejects.toThrow(/ELOOP|symbolic/);
  });

  it("VCA4: leaf contexts are cached, bounded, and re-issued near expiry; remove deletes the CA", async () => {
    const dir = tempDir();
    let now = Date.parse("2026-12-01T00:00:00Z");
    const authority = createVaultAuthority({ dir, maxLeaves: 2, now: () => new Date(now) });
    const a = await authority.serverContext("cmp_a", "a.example.com");
    expect(await authority.serverContext("cmp_a", "a.example.com")).toBe(a);
    now += 6.5 * 24 * 3_600_000;
    expect(await authority.serverContext("cmp_a", "a.example.com")).not.toBe(a);
    await authority.remove("cmp_a");
    expect(() => statSync(path.join(dir, "cmp_a"))).toThrow();
  });
});
