/** The secrets part of the store (secret-types.ts, SST1–SST3), written once against `SqlDriver`. */
import { listOwnerRows, lockOwnerRows } from "./owner-rows.ts";
import type { SqlDriver } from "./driver.ts";
import type { SecretRecord, SecretScope, SecretStore } from "./secret-types.ts";
import type { AuditWriter } from "./types.ts";

interface SecretRow {
  scope: string;
  owner_id: string;
  account_id: string;
  name: string;
  sealed: string;
  broker_hosts: string | null;
  created_at: number | string;
  updated_at: number | string;
}

const toRecord = (row: SecretRow): SecretRecord => ({
  scope: row.scope as SecretScope,
  ownerId: row.owner_id,
  accountId: row.account_id,
  name: row.name,
  sealed: row.sealed,
  brokerHosts: row.broker_hosts === null ? null : (JSON.parse(row.broker_hosts) as string[]),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

export function createSecretQueries(
  driver: SqlDriver,
  now: () => number,
  insertAudit: AuditWriter,
): SecretStore {
  return {
    async putSecret(input) {
      return driver.transaction(async (tx) => {
        // SST2: the owner's row serializes writers of its secrets (owner-rows.ts).
        const existing = await lockOwnerRows<SecretRow>(
          driver,
          tx,
          "secrets",
          input.scope,
          input.ownerId,
        );
        const old = existing.find((row) => row.name === input.name);
        if (old === undefined && existing.length >= input.limit) return { outcome: "limited" };
        const at = now();
        const hosts = input.brokerHosts === null ? null : JSON.stringify(input.brokerHosts);
        if (old === undefined)
          await tx.run(
            `INSERT INTO secrets (scope, owner_id, account_id, name, sealed, broker_hosts, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
            [input.scope, input.ownerId, input.accountId, input.name, input.sealed, hosts, at, at],
          );
        else
          await tx.run(
            "UPDATE secrets SET sealed = ?, broker_hosts = ?, updated_at = ? WHERE scope = ? AND owner_id = ? AND name = ?",
            [input.sealed, hosts, at, input.scope, input.ownerId, input.name],
          ); // SST1
        await insertAudit(tx, {
          accountId: input.actorAccountId,
          action: "secret.put",
          target: input.ownerId,
          detail: {
            scope: input.scope,
            name: input.name,
            replaced: old !== undefined,
            ...(input.brokerHosts === null ? {} : { brokerHosts: input.brokerHosts }),
          },
        }); // SST3
        const record: SecretRecord = {
          scope: input.scope,
          ownerId: input.ownerId,
          accountId: input.accountId,
          name: input.name,
          sealed: input.sealed,
          brokerHosts: input.brokerHosts,
          createdAt: old === undefined ? at : Number(old.created_at),
          updatedAt: at,
        };
        return { outcome: old === undefined ? "created" : "replaced", record };
      });
    },

    async listSecrets(scope, ownerId) {
      return (await listOwnerRows<SecretRow>(driver, "secrets", scope, ownerId)).map(toRecord);
    },

    async listAccountSecrets(accountId) {
      const rows = await driver.all<SecretRow>(
        "SELECT * FROM secrets WHERE account_id = ? ORDER BY scope, owner_id, name",
        [accountId],
      );
      return rows.map(toRecord);
    },

    async deleteSecret({ scope, ownerId, name, actorAccountId }) {
      return driver.transaction(async (tx) => {
        const deleted = await tx.run(
          "DELETE FROM secrets WHERE scope = ? AND owner_id = ? AND name = ?",
          [scope, ownerId, name],
        );
        if (deleted.changes === 0) return false;
        await insertAudit(tx, {
          accountId: actorAccountId,
          action: "secret.delete",
          target: ownerId,
          detail: { scope, name },
        }); // SST3
        return true;
      });
    },
  };
}
