/** ROOST_VAULT_DIR and ROOST_VAULT_UPSTREAM_CA_FILE: resolved once at start, bad input stops it. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createCertificateAuthority } from "../vault/index.ts";
import { resolveConfig } from "./index.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function file(text: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "roost-vault-config-"));
  dirs.push(dir);
  const target = path.join(dir, "ca.pem");
  writeFileSync(target, text);
  return target;
}

describe("vault configuration", () => {
  it("defaults: the CAs under the data dir, no extra upstream CA", () => {
    const config = resolveConfig({ "data-dir": "/srv/roost" }, {});
    expect(config.vault).toEqual({ dir: "/srv/roost/vault", upstreamCa: [] });
    expect(resolveConfig({}, { ROOST_VAULT_DIR: "/elsewhere" }).vault.dir).toBe("/elsewhere");
  });

  it("reads every certificate of ROOST_VAULT_UPSTREAM_CA_FILE", () => {
    const one = createCertificateAuthority({ commonName: "one" }).certPem;
    const two = createCertificateAuthority({ commonName: "two" }).certPem;
    const config = resolveConfig(
      {},
      { ROOST_VAULT_UPSTREAM_CA_FILE: file(`# internal\n${one}${two}`) },
    );
    expect(config.vault.upstreamCa).toEqual([one, two]);
  });

  it("bad input stops start-up with a message saying how to fix it", () => {
    expect(() => resolveConfig({}, { ROOST_VAULT_UPSTREAM_CA_FILE: "/no/such/file.pem" })).toThrow(
      /ROOST_VAULT_UPSTREAM_CA_FILE: cannot read "\/no\/such\/file\.pem".*PEM file of CA certificates/,
    );
    expect(() =>
      resolveConfig({}, { ROOST_VAULT_UPSTREAM_CA_FILE: file("not a certificate") }),
    ).toThrow(/holds no PEM certificate/);
    expect(() =>
      resolveConfig(
        {},
        {
          ROOST_VAULT_UPSTREAM_CA_FILE: file(
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
          ),
        },
      ),
    ).toThrow(/certificate 1 in .* cannot be parsed/);
  });
});
