/**
 * API tokens: `roost_` + 32 random bytes, shown once, stored only as a SHA-256 hash (STORE5).
 */
import { createHash, randomBytes } from "node:crypto";
import type { Account, ApiToken, Store } from "../store/index.ts";

export const tokenPrefix = "roost_";

export function generateApiToken(): string {
  return `${tokenPrefix}${randomBytes(32).toString("base64url")}`;
}

/** A worker token: `rwt_` + 32 random bytes; the control plane stores only its hash. */
export function generateWorkerToken(): string {
  return `rwt_${randomBytes(32).toString("base64url")}`;
}

/**
 * A self-hosted machine's worker token: `rsw_` + 32 random bytes. Long-lived (it is typed into a
 * machine once), so it is revoked by rotation or by going back to hosted, not by expiry.
 */
export function generateSelfHostedToken(): string {
  return `rsw_${randomBytes(32).toString("base64url")}`;
}

export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Creates a token for the account and returns it in the clear (the only time it exists so). */
export async function issueApiToken(
  store: Store,
  accountId: string,
  name: string,
): Promise<{ id: string; token: string }> {
  const token = generateApiToken();
  const record = await store.createApiToken({ accountId, name, tokenHash: hashToken(token) });
  return { id: record.id, token };
}

/** The account and token record a bearer token stands for; undefined for unknown or revoked ones. */
export async function authenticate(
  store: Store,
  token: string,
): Promise<{ account: Account; token: ApiToken } | undefined> {
  if (!token.startsWith(tokenPrefix)) return undefined;
  return store.findApiToken(hashToken(token));
}
