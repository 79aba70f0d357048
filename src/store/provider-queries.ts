/** The model providers part of the store (provider-types.ts, MPST1–MPST2), written once against `SqlDriver`. */
import type { SqlDriver } from "./driver.ts";
import type {
  ModelProviderKind,
  ModelProviderRecord,
  ModelProviderStore,
} from "./provider-types.ts";
import type { AuditWriter } from "./types.ts";

interface ProviderRow {
  id: string;
  kind: string;
  label: string;
  base_url: string | null;
  sealed_key: string | null;
  key_hint: string | null;
  created_at: number | string;
  updated_at: number | string;
}

const toRecord = (row: ProviderRow): ModelProviderRecord => ({
  id: row.id,
  kind: row.kind as ModelProviderKind,
  label: row.label,
  baseUrl: row.base_url,
  sealedKey: row.sealed_key,
  keyHint: row.key_hint,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

export function createProviderQueries(
  driver: SqlDriver,
  now: () => number,
  insertAudit: AuditWriter,
): ModelProviderStore {
  return {
    async listModelProviders() {
      const rows = await driver.all<ProviderRow>("SELECT * FROM model_providers ORDER BY id");
      return rows.map(toRecord);
    },

    async putModelProvider(input) {
      return driver.transaction(async (tx) => {
        const at = now();
        const values = [input.kind, input.label, input.baseUrl, input.sealedKey, input.keyHint];
        // MPST1: a writer racing another's first insert of the id replaces it instead of failing.
        const inserted = await tx.run(
          `INSERT INTO model_providers (id, kind, label, base_url, sealed_key, key_hint, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
          [input.id, ...values, at, at],
        );
        const created = inserted.changes > 0;
        if (!created)
          await tx.run(
            "UPDATE model_providers SET kind = ?, label = ?, base_url = ?, sealed_key = ?, key_hint = ?, updated_at = ? WHERE id = ?",
            [...values, at, input.id],
          );
        const [row] = created
          ? [undefined]
          : await tx.all<ProviderRow>("SELECT created_at FROM model_providers WHERE id = ?", [
              input.id,
            ]);
        await insertAudit(tx, {
          accountId: input.actorAccountId,
          action: "model_provider.put",
          target: input.id,
          detail: {
            kind: input.kind,
            baseUrl: input.baseUrl,
            hasKey: input.sealedKey !== null,
            replaced: !created,
          },
        }); // MPST2
        const { actorAccountId: _actor, ...fields } = input;
        return {
          outcome: created ? "created" : "replaced",
          record: {
            ...fields,
            createdAt: row === undefined ? at : Number(row.created_at),
            updatedAt: at,
          },
        };
      });
    },

    async deleteModelProvider({ id, actorAccountId }) {
      return driver.transaction(async (tx) => {
        const deleted = await tx.run("DELETE FROM model_providers WHERE id = ?", [id]);
        if (deleted.changes === 0) return false;
        await insertAudit(tx, {
          accountId: actorAccountId,
          action: "model_provider.delete",
          target: id,
          detail: {},
        }); // MPST2
        return true;
      });
    },
  };
}
