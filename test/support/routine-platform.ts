/**
 * The real platform in-process for routine tests: embedded Restate, SQLite in a temp dir, the
 * demo model (offline), a recording Notifier, and routine settings lowered for tests.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveConfig } from "../../src/config/index.ts";
import { findFreePort } from "../../src/engine/index.ts";
import { createMemoryLogger } from "../../src/log/testing/index.ts";
import { createDemoModel } from "../../src/models/index.ts";
import type { NotificationInput } from "../../src/notifications/index.ts";
import { startPlatform, type Platform } from "../../src/platform/index.ts";
import { apiClient } from "./api-client.ts";

export interface RoutinePlatform {
  readonly platform: Platform;
  readonly url: string;
  readonly token: string;
  readonly notifications: NotificationInput[];
  readonly api: ReturnType<typeof apiClient>;
  close(): Promise<void>;
}

export async function startRoutinePlatform(
  env: Record<string, string> = {},
): Promise<RoutinePlatform> {
  const dataDir = await mkdtemp(join(tmpdir(), "roost-routines-"));
  const notifications: NotificationInput[] = [];
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
      {
        ROOST_MEMORY_PASS: "off",
        ROOST_FOLLOW_UP_WINDOW_MS: "100",
        ROOST_ROUTINE_MIN_INTERVAL_MS: "500",
        ...env,
      },
    );
    platform = await startPlatform(config, {
      logger: createMemoryLogger(),
      resolveModel: () => createDemoModel(),
      toolSources: [],
      notifier: { notify: async (notification) => void notifications.push(notification) },
      sweepIntervalMs: 500,
    });
    const started = platform;
    const token = (await readFile(join(dataDir, "admin-token"), "utf8")).trim();
    return {
      platform: started,
      url: started.url,
      token,
      notifications,
      api: apiClient(started.url, () => token),
      async close() {
        try {
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
