/**
 * This node's id as a computer host (decision 0040): ROOST_NODE_ID, or an id made on first start
 * and kept in `<dataDir>/node-id`, so a restarted node is still the home of its computers.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

export async function resolveNodeId(
  configured: string | undefined,
  dataDir: string,
): Promise<string> {
  if (configured !== undefined) return configured;
  const file = join(dataDir, "node-id");
  const existing = (await readFile(file, "utf8").catch(() => "")).trim();
  if (/^[A-Za-z0-9_-]{1,40}$/.test(existing)) return existing;
  const made = `node_${randomBytes(6).toString("hex")}`;
  await mkdir(dataDir, { recursive: true });
  // "wx": two starts racing on one data dir keep the first id.
  await writeFile(file, `${made}\n`, { flag: "wx", mode: 0o600 }).catch(async (error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  });
  return (await readFile(file, "utf8")).trim();
}
