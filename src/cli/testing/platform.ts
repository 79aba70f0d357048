/**
 * The real platform in-process for the CLI's end-to-end tests: embedded Restate, SQLite in a temp
 * dir, the demo model; the commands under test run as child processes against its URL.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveConfig } from "../../config/index.ts";
import { findFreePort } from "../../engine/index.ts";
import { createMemoryLogger } from "../../log/testing/index.ts";
import { startPlatform, type Platform, type PlatformOptions } from "../../platform/index.ts";
import { waitFor } from "../../../test/support/wait.ts";

export interface CliPlatform {
  readonly platform: Platform;
  readonly url: string;
  readonly adminToken: string;
  close(): Promise<void>;
}

export async function startCliPlatform(
  options: {
    env?: Record<string, string>;
    toolSources?: PlatformOptions["toolSources"];
    results?: PlatformOptions["results"];
  } = {},
): Promise<CliPlatform> {
  const dataDir = await mkdtemp(join(tmpdir(), "roost-cli-e2e-"));
  let platform: Platform | undefined;
  try {
    const ingress = await findFreePort();
    const admin = await findFreePort([ingress]);
    const node = await findFreePort([ingress, admin]);
    const config = resolveConfig(
      {
        "data-dir": dataDir,
        port: "0",
        "service-port": "0",
        "restate-ingress-port": String(ingress),
        "restate-admin-port": String(admin),
        "restate-node-port": String(node),
      },
      options.env ?? {},
    );
    platform = await startPlatform(config, {
      logger: createMemoryLogger(),
      ...(options.toolSources === undefined ? {} : { toolSources: options.toolSources }),
      ...(options.results === undefined ? {} : { results: options.results }),
    });
    const started = platform;
    const adminToken = (await readFile(join(dataDir, "admin-token"), "utf8")).trim();
    return {
      platform: started,
      url: started.url,
      adminToken,
      async close() {
        try {
          await sleepComputer(started.url, adminToken);
          await started.close();
        } finally {
          await rm(dataDir, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    await platform?.close();
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Puts the admin's computer to sleep before the platform closes (platform.close() does not yet
 * finish while a worker is connected; see test/web/harness.ts). A turn that still holds the
 * computer answers 409: wait for it, then close anyway.
 */
async function sleepComputer(url: string, token: string): Promise<void> {
  await waitFor(
    async () => {
      const response = await fetch(`${url}/v1/computers/me/sleep`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      }).catch(() => undefined);
      if (response === undefined || response.status === 404) return true;
      const body = (await response.json().catch(() => ({}))) as { state?: string };
      return response.ok && body.state === "asleep";
    },
    { timeoutMs: 30_000, intervalMs: 250, what: "the computer to sleep" },
  ).catch(() => undefined);
}
