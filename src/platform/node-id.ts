/**
 * This node's id as a computer host (decision 0040): ROOST_NODE_ID, or an id made on first start
 * and kept in `<dataDir>/node-id`, so a restarted node is still the home of its computers.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError } from "../errors/index.ts";

const validId = /^[A-Za-z0-9_-]{1,40}$/;

export async function resolveNodeId(
  configured: string | undefined,
  dataDir: string,
): Promise<string> {
  if (configured !== undefined) return configured;
  const file = join(dataDir, "node-id");
  const read = async () => {
    const text = await readFile(file, "utf8").catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    });
    if (text === undefined) return undefined;
    const id = text.trim();
    // A changed id would orphan every computer whose home this node is: never replace it silently.
    if (!validId.test(id))
      throw new ConfigError(
        `${file} does not hold a node id (1–40 letters, digits, "_" or "-"); restore it, or set ROOST_NODE_ID to this node's id`,
      );
    return id;
  };
  const existing = await read();
  if (existing !== undefined) return existing;
  await mkdir(dataDir, { recursive: true });
  // "wx": of two starts racing on one data dir, the first id is kept.
  await writeFile(file, `node_${randomBytes(6).toString("hex")}\n`, {
    flag: "wx",
    mode: 0o600,
  }).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  });
  return (await read())!;
}
