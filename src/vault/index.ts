/**
 * The vault at the network boundary: brokered secrets, swapped into requests by the egress proxy
 * only for their hosts, with TLS terminated by a per-computer CA for those hosts alone.
 * docs/vault.md describes it for users and operators; decision 0024 explains the choices.
 */
export { swapAuditTo } from "./audit.ts";
export {
  createVaultAuthority,
  type ComputerTrust,
  type VaultAuthority,
  type VaultAuthorityOptions,
} from "./authority.ts";
export {
  brokeredEnvironment,
  createRedactingStream,
  hostAllowed,
  parseBrokerHosts,
  placeholderFor,
  placeholderPrefix,
  redactedText,
  redactionPatterns,
  type BrokeredSecret,
  type BrokeredSecrets,
} from "./broker.ts";
export { createVault, type VaultOptions, type VaultSwap } from "./vault.ts";
export {
  createCertificateAuthority,
  issueServerCertificate,
  type CertificateAndKey,
} from "./x509.ts";
