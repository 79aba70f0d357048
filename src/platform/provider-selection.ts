/**
 * Which computer provider this server uses (docs/computers.md), and the egress proxy the isolated
 * one sends every computer's traffic through (docs/egress.md). `process` isolates nothing, so it
 * is never chosen silently: `auto` picks `local` where the host allows it and otherwise stops
 * with a message naming what is missing.
 */
import {
  chooseComputerProvider,
  createLocalProvider,
  createProcessProvider,
  detectHost,
  insidePaths,
  prepareWorkerBuild,
  type ComputerProvider,
} from "../computers/index.ts";
import type { RoostConfig } from "../config/index.ts";
import {
  auditTo,
  createEgressProxy,
  parseEgressPolicy,
  type EgressProxy,
} from "../egress/index.ts";
import type { Store } from "../store/index.ts";

export interface ComputerRuntime {
  provider: ComputerProvider;
  /** Present with the isolated provider: every computer's way out. */
  egress: EgressProxy | undefined;
  /** Apply a computer's stored policy to the proxy (on wake, and after a change). */
  applyPolicy(computerId: string): Promise<void>;
  close(): Promise<void>;
}

export async function startComputerRuntime(
  config: RoostConfig,
  store: Store,
  log: (message: string) => void,
): Promise<ComputerRuntime> {
  const choice = chooseComputerProvider(config.computers.provider, await detectHost());
  const workerBuild = await prepareWorkerBuild({ log });
  if (choice.kind === "process") {
    log(
      "roost: WARNING: computers use the `process` provider: bots' commands run as this server's user with NO isolation and NO egress policy. Use it only for development.",
    );
    if (choice.warning !== undefined) log(`roost: ${choice.warning}`);
    const provider = createProcessProvider({
      root: config.computers.root,
      log,
      ...(workerBuild === undefined ? {} : { workerEntry: workerBuild.entry }),
    });
    return {
      provider,
      egress: undefined,
      applyPolicy: async () => undefined,
      close: () => provider.close(),
    };
  }

  const audit = auditTo(store, { log });
  const egress = createEgressProxy({ onRequest: audit, log });
  const address = await egress.listen("127.0.0.1", 0);
  const applyPolicy = async (computerId: string) => {
    const stored = await store.getNetworkPolicy(computerId);
    egress.setPolicy(
      computerId,
      stored === null ? { mode: "defaults-and-allowlist", allow: [] } : parseEgressPolicy(stored),
    );
  };
  const provider = await createLocalProvider({
    dataDir: config.computers.root,
    limits: { diskBytes: config.computers.diskBytes },
    log,
    ...(workerBuild === undefined
      ? {}
      : { workerArgv: [insidePaths.node, `${insidePaths.roost}/${workerBuild.relativeEntry}`] }),
    egressProxy: { host: "127.0.0.1", port: address.port },
    onNetwork: (event) => {
      if (event.type === "up") {
        egress.assign(event.computerAddress, event.computerId);
        applyPolicy(event.computerId).catch((error: unknown) =>
          log(
            `roost: computer ${event.computerId}: could not apply its network policy: ${String(error)}`,
          ),
        );
      } else {
        egress.unassign(event.computerAddress);
      }
    },
    onExit: (computerId, detail) => log(`roost: computer ${computerId}: sandbox ended (${detail})`),
  });
  return {
    provider,
    egress,
    applyPolicy,
    async close() {
      await provider.close();
      await egress.close();
      await audit.flush();
    },
  };
}
