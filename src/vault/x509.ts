/**
 * Just enough X.509 to run a certificate authority for the vault: a self-signed CA certificate
 * and leaf server certificates it signs, ECDSA P-256 with SHA-256, DER built by hand (no
 * dependency; node:crypto signs, `X509Certificate` parses and verifies in the tests).
 *
 * Invariants:
 *   X509V1 A CA certificate is `CA:TRUE, pathlen:0`, key usage keyCertSign + cRLSign, with a
 *      subject key identifier; a leaf is `CA:FALSE`, key usage digitalSignature, extended key
 *      usage serverAuth, one subjectAltName (a DNS name or an IP address), and an authority key
 *      identifier naming its CA, so strict verifiers (Python ≥ 3.13, OpenSSL's X509_STRICT)
 *      accept it.
 *   X509V2 Serial numbers are 16 random bytes, positive; validity starts one hour in the past
 *      (clock skew inside the computer).
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  X509Certificate,
  type KeyObject,
} from "node:crypto";
import { isIP } from "node:net";

/** A certificate and its private key, both PEM. */
export interface CertificateAndKey {
  certPem: string;
  keyPem: string;
}

// ---- DER ----------------------------------------------------------------------------------

function length(size: number): Buffer {
  if (size < 0x80) return Buffer.from([size]);
  const bytes: number[] = [];
  for (let rest = size; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

const sequence = (...items: Buffer[]): Buffer => tlv(0x30, ...items);
const set = (...items: Buffer[]): Buffer => tlv(0x31, ...items);
const octets = (value: Buffer): Buffer => tlv(0x04, value);
const explicit = (tag: number, item: Buffer): Buffer => tlv(0xa0 + tag, item);
const bool = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));

function integer(value: Buffer | number): Buffer {
  let bytes = typeof value === "number" ? Buffer.from([value]) : value;
  while (bytes.length > 1 && bytes[0] === 0 && ((bytes[1] ?? 0) & 0x80) === 0)
    bytes = bytes.subarray(1);
  if (((bytes[0] ?? 0) & 0x80) !== 0) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return tlv(0x02, bytes);
}

function bitString(value: Buffer, unusedBits = 0): Buffer {
  return tlv(0x03, Buffer.from([unusedBits]), value);
}

function oid(dotted: string): Buffer {
  const parts = dotted.split(".").map(Number);
  const bytes: number[] = [40 * (parts[0] ?? 0) + (parts[1] ?? 0)];
  for (const part of parts.slice(2)) {
    const chunk: number[] = [part & 0x7f];
    for (let rest = Math.floor(part / 128); rest > 0; rest = Math.floor(rest / 128))
      chunk.unshift(0x80 | (rest & 0x7f));
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, "").slice(0, 14) + "Z"; // YYYYMMDDHHMMSSZ
  // RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050.
  return date.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(iso.slice(2), "ascii"))
    : tlv(0x18, Buffer.from(iso, "ascii"));
}

const oids = {
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  commonName: "2.5.4.3",
  organization: "2.5.4.10",
  subjectKeyIdentifier: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  authorityKeyIdentifier: "2.5.29.35",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
};

function name(commonName: string): Buffer {
  const utf8 = (text: string) => tlv(0x0c, Buffer.from(text, "utf8"));
  return sequence(
    set(sequence(oid(oids.organization), utf8("Roost vault"))),
    set(sequence(oid(oids.commonName), utf8(commonName))),
  );
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [bool(true)] : []), octets(value));
}

function keyIdentifier(publicKey: KeyObject): Buffer {
  // RFC 5280 §4.2.1.2 method 1 (SHA-1 of the key bits) on the SPKI: stable per key, which is all
  // that matters.
  return createHash("sha1")
    .update(publicKey.export({ type: "spki", format: "der" }))
    .digest();
}

function subjectAltName(host: string): Buffer {
  const family = isIP(host);
  if (family === 0) return sequence(tlv(0x82, Buffer.from(host, "ascii"))); // dNSName
  const bytes =
    family === 4
      ? Buffer.from(host.split(".").map(Number))
      : Buffer.from(expandIpv6(host).join(""), "hex");
  return sequence(tlv(0x87, bytes)); // iPAddress
}

function expandIpv6(address: string): string[] {
  const [head = "", tail] = address.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const middle = Array.from({ length: 8 - left.length - right.length }, () => "0");
  return [...left, ...(tail === undefined ? [] : middle), ...right].map((group) =>
    group.padStart(4, "0"),
  );
}

function toPem(label: string, der: Buffer): string {
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

function pemBody(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""), "base64");
}

interface CertificateInput {
  subject: string;
  issuer: string;
  publicKey: KeyObject;
  signingKey: KeyObject;
  notBefore: Date;
  notAfter: Date;
  extensions: Buffer[];
}

function buildCertificate(input: CertificateInput): string {
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f; // X509V2
  const algorithm = sequence(oid(oids.ecdsaWithSha256));
  const tbs = sequence(
    explicit(0, integer(2)), // v3
    integer(serial),
    algorithm,
    name(input.issuer),
    sequence(time(input.notBefore), time(input.notAfter)),
    name(input.subject),
    input.publicKey.export({ type: "spki", format: "der" }),
    explicit(3, sequence(...input.extensions)),
  );
  const signature = sign("sha256", tbs, input.signingKey); // DER ECDSA-Sig-Value
  return toPem("CERTIFICATE", sequence(tbs, algorithm, bitString(signature)));
}

const hourMs = 3_600_000;

/** A new self-signed CA (X509V1), valid for `validDays` from now. */
export function createCertificateAuthority(options: {
  commonName: string;
  validDays?: number;
  now?: Date;
}): CertificateAndKey {
  const now = options.now ?? new Date();
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const certPem = buildCertificate({
    subject: options.commonName,
    issuer: options.commonName,
    publicKey,
    signingKey: privateKey,
    notBefore: new Date(now.getTime() - hourMs),
    notAfter: new Date(now.getTime() + (options.validDays ?? 3650) * 24 * hourMs),
    extensions: [
      extension(oids.basicConstraints, true, sequence(bool(true), integer(0))),
      // keyCertSign (bit 5) and cRLSign (bit 6): 0b0000_0110, one unused bit.
      extension(oids.keyUsage, true, bitString(Buffer.from([0x06]), 1)),
      extension(oids.subjectKeyIdentifier, false, octets(keyIdentifier(publicKey))),
    ],
  });
  return { certPem, keyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() };
}

/** A leaf server certificate for `host` (a DNS name or an IP address) signed by `ca` (X509V1). */
export function issueServerCertificate(options: {
  ca: CertificateAndKey;
  host: string;
  /** The leaf's key. @default a new P-256 key */
  key?: KeyObject;
  validDays?: number;
  now?: Date;
}): CertificateAndKey {
  const now = options.now ?? new Date();
  const caKey = createPrivateKey(options.ca.keyPem);
  const leafKey = options.key ?? generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
  const issuer = readCommonName(options.ca.certPem);
  const certPem = buildCertificate({
    subject: options.host,
    issuer,
    publicKey: createPublicKey(leafKey),
    signingKey: caKey,
    notBefore: new Date(now.getTime() - hourMs),
    notAfter: new Date(now.getTime() + (options.validDays ?? 30) * 24 * hourMs),
    extensions: [
      extension(oids.basicConstraints, true, sequence()),
      // digitalSignature (bit 0): 0b1000_0000, seven unused bits.
      extension(oids.keyUsage, true, bitString(Buffer.from([0x80]), 7)),
      extension(oids.extKeyUsage, false, sequence(oid(oids.serverAuth))),
      extension(oids.subjectAltName, false, subjectAltName(options.host)),
      extension(
        oids.authorityKeyIdentifier,
        false,
        sequence(tlv(0x80, keyIdentifier(createPublicKey(caKey)))),
      ),
    ],
  });
  return { certPem, keyPem: leafKey.export({ type: "pkcs8", format: "pem" }).toString() };
}

/** The common name we wrote into one of our own certificates (the last CN of the subject). */
function readCommonName(certPem: string): string {
  // Our CA subjects are O=Roost vault, CN=<name>; Node's parser reads it back.
  const der = pemBody(certPem);
  const subject = new X509Certificate(der).subject;
  const match = /CN=([^\n]+)/.exec(subject);
  if (match?.[1] === undefined) throw new Error("vault: the CA certificate has no common name");
  return match[1];
}
