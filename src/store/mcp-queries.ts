/** The MCP servers part of the store (mcp-types.ts, MST1–MST3), written once against `SqlDriver`. */
import { listOwnerRows, lockOwnerRows } from "./owner-rows.ts";
import type { SqlDriver } from "./driver.ts";
import type {
  McpScope,
  McpServerRecord,
  McpStore,
  McpToolRecord,
  McpTransport,
} from "./mcp-types.ts";
import type { AuditWriter } from "./types.ts";

interface McpRow {
  scope: string;
  owner_id: string;
  account_id: string;
  name: string;
  transport: string;
  spec: string;
  sealed: string | null;
  secret_names: string;
  tools: string | null;
  listed_at: number | string | null;
  last_error: string | null;
  last_error_at: number | string | null;
  oauth: string | null;
  oauth_state: string | null;
  created_at: number | string;
  updated_at: number | string;
}

const orNull = (value: number | string | null) => (value === null ? null : Number(value));

const toRecord = (row: McpRow): McpServerRecord => ({
  scope: row.scope as McpScope,
  ownerId: row.owner_id,
  accountId: row.account_id,
  name: row.name,
  transport: row.transport as McpTransport,
  spec: row.spec,
  sealed: row.sealed,
  secretNames: JSON.parse(row.secret_names) as string[],
  tools: row.tools === null ? null : (JSON.parse(row.tools) as McpToolRecord[]),
  listedAt: orNull(row.listed_at),
  lastError: row.last_error,
  lastErrorAt: orNull(row.last_error_at),
  oauth: row.oauth,
  oauthState: row.oauth_state,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

export function createMcpQueries(
  driver: SqlDriver,
  now: () => number,
  insertAudit: AuditWriter,
): McpStore {
  return {
    async putMcpServer(input) {
      return driver.transaction(async (tx) => {
        // MST2: the owner's row serializes writers (owner-rows.ts).
        const existing = await lockOwnerRows<McpRow>(
          driver,
          tx,
          "mcp_servers",
          input.scope,
          input.ownerId,
        );
        const old = existing.find((row) => row.name === input.name);
        if (old === undefined && existing.length >= input.limit) return { outcome: "limited" };
        // Strictly later than the old row, so a listing of the old settings cannot land (MST1).
        const at = old === undefined ? now() : Math.max(now(), Number(old.updated_at) + 1);
        const names = JSON.stringify(input.secretNames);
        if (old === undefined)
          await tx.run(
            `INSERT INTO mcp_servers (scope, owner_id, account_id, name, transport, spec, sealed,
               secret_names, tools, listed_at, last_error, last_error_at, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, ?, ?)`,
            [
              input.scope,
              input.ownerId,
              input.accountId,
              input.name,
              input.transport,
              input.spec,
              input.sealed,
              names,
              at,
              at,
            ],
          );
        else
          await tx.run(
            `UPDATE mcp_servers SET transport = ?, spec = ?, sealed = ?, secret_names = ?,
               tools = NULL, listed_at = NULL, last_error = NULL, last_error_at = NULL,
               oauth = NULL, oauth_state = NULL, updated_at = ?
             WHERE scope = ? AND owner_id = ? AND name = ?`,
            [
              input.transport,
              input.spec,
              input.sealed,
              names,
              at,
              input.scope,
              input.ownerId,
              input.name,
            ],
          ); // MST1
        await insertAudit(tx, {
          accountId: input.actorAccountId,
          action: "mcp_server.put",
          target: input.ownerId,
          detail: {
            scope: input.scope,
            name: input.name,
            transport: input.transport,
            replaced: old !== undefined,
          },
        }); // MST3
        const record: McpServerRecord = {
          scope: input.scope,
          ownerId: input.ownerId,
          accountId: input.accountId,
          name: input.name,
          transport: input.transport,
          spec: input.spec,
          sealed: input.sealed,
          secretNames: input.secretNames,
          tools: null,
          listedAt: null,
          lastError: null,
          lastErrorAt: null,
          oauth: null,
          oauthState: null,
          createdAt: old === undefined ? at : Number(old.created_at),
          updatedAt: at,
        };
        return { outcome: old === undefined ? "created" : "replaced", record };
      });
    },

    async listMcpServers(scope, ownerId) {
      return (await listOwnerRows<McpRow>(driver, "mcp_servers", scope, ownerId)).map(toRecord);
    },

    async getMcpServer(scope, ownerId, name) {
      const rows = await driver.all<McpRow>(
        "SELECT * FROM mcp_servers WHERE scope = ? AND owner_id = ? AND name = ?",
        [scope, ownerId, name],
      );
      return rows[0] === undefined ? undefined : toRecord(rows[0]);
    },

    async deleteMcpServer({ scope, ownerId, name, actorAccountId }) {
      return driver.transaction(async (tx) => {
        const deleted = await tx.run(
          "DELETE FROM mcp_servers WHERE scope = ? AND owner_id = ? AND name = ?",
          [scope, ownerId, name],
        );
        if (deleted.changes === 0) return false;
        await insertAudit(tx, {
          accountId: actorAccountId,
          action: "mcp_server.delete",
          target: ownerId,
          detail: { scope, name },
        }); // MST3
        return true;
      });
    },

    async saveMcpOAuth(key, oauth) {
      const result = await driver.run(
        `UPDATE mcp_servers SET oauth = ?, oauth_state = ?
         WHERE scope = ? AND owner_id = ? AND name = ? AND updated_at = ?`,
        [oauth.sealed, oauth.state, key.scope, key.ownerId, key.name, key.updatedAt],
      );
      return result.changes > 0;
    },

    async findMcpServerByOAuthState(state) {
      const rows = await driver.all<McpRow>("SELECT * FROM mcp_servers WHERE oauth_state = ?", [
        state,
      ]);
      return rows[0] === undefined ? undefined : toRecord(rows[0]);
    },

    async recordMcpListing(key, outcome) {
      const at = now();
      const where = "WHERE scope = ? AND owner_id = ? AND name = ? AND updated_at = ?";
      const keys = [key.scope, key.ownerId, key.name, key.updatedAt];
      if ("tools" in outcome)
        await driver.run(
          `UPDATE mcp_servers SET tools = ?, listed_at = ?, last_error = NULL, last_error_at = NULL ${where}`,
          [JSON.stringify(outcome.tools), at, ...keys],
        );
      else
        await driver.run(`UPDATE mcp_servers SET last_error = ?, last_error_at = ? ${where}`, [
          outcome.error,
          at,
          ...keys,
        ]);
    },
  };
}
