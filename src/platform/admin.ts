/**
 * The local admin of an embedded install: created on first start, its token written to
 * `$ROOST_DATA_DIR/admin-token` (0600). A deleted token file is replaced by a fresh token.
 */
import { existsSync } from "node:fs";
import { chmod, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { issueApiToken } from "../auth/index.ts";
import type { Store } from "../store/index.ts";

export async function ensureLocalAdmin(
  store: Store,
  dataDir: string,
): Promise<{ tokenFile: string; created: boolean }> {
  const tokenFile = join(dataDir, "admin-token");
  // One admin however many nodes start together on a fresh database (STORE-ADMIN1); each node
  // writes its own token file for it (docs/operations.md, "Scale mode").
  const { account: admin, created } = await store.ensureAdminAccount("admin");
  if (created || !existsSync(tokenFile)) {
    const { token } = await issueApiToken(store, admin.id, "local admin");
    await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
    await chmod(tokenFile, 0o600);
    await store.audit({
      accountId: admin.id,
      action: "token.create",
      target: admin.id,
      detail: { reason: "local admin token file" },
    });
  }
  return { tokenFile, created };
}
