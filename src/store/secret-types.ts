/**
 * Secrets as the store keeps them (issue 12 §2, docs/secrets.md): sealed values (src/secrets/
 * crypto.ts) with their names and metadata; the store never sees a plain value.
 *
 * Invariants (both implementations; checked by secrets.contract.ts):
 *   SST1 one secret per (scope, owner, name): a PUT of a name that exists replaces its value.
 *   SST2 at most `limit` secrets per owner, also under concurrent writes: the owner's row (the
 *        bot, or the account for user secrets) is locked while counting and inserting, so of 26
 *        racing new names under a limit of 25 exactly one is refused.
 *   SST3 every write and delete is audited in its transaction (name and scope, never the value).
 */
export type SecretScope = "bot" | "user";

export interface SecretRecord {
  scope: SecretScope;
  /** The bot's id, or the account's id for a user secret. */
  ownerId: string;
  accountId: string;
  name: string;
  /** The value, sealed (crypto.ts). */
  sealed: string;
  /** Brokered through the egress proxy for these hosts only (decision 0024); null: injected. */
  brokerHosts: string[] | null;
  createdAt: number;
  updatedAt: number;
}

export interface PutSecretInput extends Pick<
  SecretRecord,
  "scope" | "ownerId" | "accountId" | "name" | "sealed" | "brokerHosts"
> {
  /** SST2: refuse a new name when the owner already has this many. */
  limit: number;
  /** Who wrote it (the audit row's account). */
  actorAccountId: string;
}

export interface SecretStore {
  /** SST1–SST3: `created` tells a new name from a replaced value; `limited` a refused new name. */
  putSecret(
    input: PutSecretInput,
  ): Promise<{ outcome: "created" | "replaced"; record: SecretRecord } | { outcome: "limited" }>;
  listSecrets(scope: SecretScope, ownerId: string): Promise<SecretRecord[]>;
  /** Every secret of the account: its user secrets and all of its bots'. */
  listAccountSecrets(accountId: string): Promise<SecretRecord[]>;
  /** SST3: false when there was none. */
  deleteSecret(input: {
    scope: SecretScope;
    ownerId: string;
    name: string;
    actorAccountId: string;
  }): Promise<boolean>;
}
