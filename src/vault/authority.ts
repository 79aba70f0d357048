/**
 * The per-computer certificate authorities of the vault. Each computer gets its own CA, made on
 * first use and kept in the data dir, so a computer trusts its CA across restarts of Roost and
 * no computer can be shown another's certificates.
 *
 * Invariants:
 *   VCA1 A CA's private key never leaves the server: it is written once, mode 0600 in a 0700
 *      folder under the data dir (`<dir>/<computerId>/ca-key.pem`), and the computer is given
 *      only the certificate (`trustFor`).
 *   VCA2 One CA per computer; a computer id that could leave the folder (anything outside
 *      `[A-Za-z0-9_-]`) is refused, and files are opened without following symlinks.
 *   VCA3 A CA is made at most once per computer per process (concurrent first uses share it);
 *      it is written to temporary files and renamed into place, so a crash leaves either no CA
 *      or a whole one.
 *   VCA4 Leaf certificates are issued on demand per (computer, host), valid 7 days, kept in a
 *      bounded cache (`maxLeaves`), and re-issued a day before they expire.
 */
import { generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { constants } from "node:fs";
import { mkdir, open, rename, rm } from "node:fs/promises";
import path from "node:path";
import { createSecureContext, rootCertificates, type SecureContext } from "node:tls";
import { InvalidRequestError } from "../errors/index.ts";
import {
  createCertificateAuthority,
  issueServerCertificate,
  type CertificateAndKey,
} from "./x509.ts";

/** What a computer needs to trust its vault CA. */
export interface ComputerTrust {
  /** The computer's CA certificate alone (for NODE_EXTRA_CA_CERTS). */
  caPem: string;
  /** Node's bundled public roots followed by the computer's CA (for SSL_CERT_FILE and the like). */
  bundlePem: string;
}

export interface VaultAuthority {
  trustFor(computerId: string): Promise<ComputerTrust>;
  /** A TLS server context for `host`, its certificate signed by the computer's CA (VCA4). */
  serverContext(computerId: string, host: string): Promise<SecureContext>;
  /** Forget a computer's CA and delete its files (when the computer is destroyed). */
  remove(computerId: string): Promise<void>;
}

export interface VaultAuthorityOptions {
  /** Folder of the CAs, under the data dir (`<dataDir>/vault`). */
  dir: string;
  /** Leaf contexts kept. @default 1000 */
  maxLeaves?: number;
  now?: () => Date;
}

const computerIdPattern = /^[A-Za-z0-9_-]{1,128}$/;
const dayMs = 24 * 3_600_000;
const leafDays = 7;

async function readNoFollow(file: string): Promise<string | undefined> {
  try {
    const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW); // VCA2
    try {
      return await handle.readFile("utf8");
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return undefined;
    throw error;
  }
}

async function writeNew(file: string, text: string, mode: number): Promise<void> {
  const handle = await open(
    file,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Create the vault's CA store. */
export function createVaultAuthority(options: VaultAuthorityOptions): VaultAuthority {
  const now = options.now ?? (() => new Date());
  const maxLeaves = options.maxLeaves ?? 1000;
  const authorities = new Map<string, Promise<CertificateAndKey>>();
  const leaves = new Map<string, { context: SecureContext; expiresAt: number }>();
  /** One leaf key per process for every host: EC keys are cheap, but a handshake needs none new. */
  let leafKey: KeyObject | undefined;

  function folderOf(computerId: string): string {
    if (!computerIdPattern.test(computerId))
      throw new InvalidRequestError(`vault: ${JSON.stringify(computerId)} is not a computer id`); // VCA2
    return path.join(options.dir, computerId);
  }

  async function loadOrCreate(computerId: string): Promise<CertificateAndKey> {
    const folder = folderOf(computerId);
    const certFile = path.join(folder, "ca.pem");
    const keyFile = path.join(folder, "ca-key.pem");
    const [certPem, keyPem] = await Promise.all([readNoFollow(certFile), readNoFollow(keyFile)]);
    if (certPem !== undefined && keyPem !== undefined) return { certPem, keyPem };
    await mkdir(folder, { recursive: true, mode: 0o700 });
    const made = createCertificateAuthority({
      commonName: `Roost vault CA for computer ${computerId}`,
      now: now(),
    });
    const suffix = randomBytes(6).toString("hex");
    await writeNew(`${keyFile}.${suffix}`, made.keyPem, 0o600); // VCA1
    await writeNew(`${certFile}.${suffix}`, made.certPem, 0o600); // nothing in the data dir is open to others
    // VCA3: the key first, so a cert on disk always has its key.
    await rename(`${keyFile}.${suffix}`, keyFile);
    await rename(`${certFile}.${suffix}`, certFile);
    return made;
  }

  function authorityOf(computerId: string): Promise<CertificateAndKey> {
    let pending = authorities.get(computerId);
    if (pending === undefined) {
      pending = loadOrCreate(computerId); // VCA3
      authorities.set(computerId, pending);
      pending.catch(() => authorities.delete(computerId));
    }
    return pending;
  }

  return {
    async trustFor(computerId) {
      const ca = await authorityOf(computerId);
      return { caPem: ca.certPem, bundlePem: `${rootCertificates.join("\n")}\n${ca.certPem}` };
    },
    async serverContext(computerId, host) {
      const key = `${computerId}\n${host}`;
      const cached = leaves.get(key);
      const at = now().getTime();
      if (cached !== undefined && cached.expiresAt - dayMs > at) {
        leaves.delete(key);
        leaves.set(key, cached); // most recently used last
        return cached.context;
      }
      const ca = await authorityOf(computerId);
      leafKey ??= generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
      const leaf = issueServerCertificate({
        ca,
        host,
        key: leafKey,
        validDays: leafDays,
        now: now(),
      });
      const context = createSecureContext({
        cert: `${leaf.certPem}${ca.certPem}`,
        key: leaf.keyPem,
      });
      leaves.set(key, { context, expiresAt: at + leafDays * dayMs });
      while (leaves.size > maxLeaves) {
        const oldest = leaves.keys().next().value;
        if (oldest === undefined) break;
        leaves.delete(oldest); // VCA4
      }
      return context;
    },
    async remove(computerId) {
      const folder = folderOf(computerId);
      authorities.delete(computerId);
      for (const key of [...leaves.keys()])
        if (key.startsWith(`${computerId}\n`)) leaves.delete(key);
      await rm(folder, { recursive: true, force: true });
    },
  };
}
