/**
 * Which computer provider this server uses (docs/computers.md), and the egress proxy the isolated
 * one sends every computer's traffic through (docs/egress.md). `process` isolates nothing, so it
 * is never chosen silently: `auto` picks `local` where the host allows it and otherwise stops
 * with a message naming what is missing.
 *
 * With `local`, each awake computer gets three unix sockets on the host, the only things its
 * sandbox can reach: the gateway's (`gateway.listenComputer`) and the egress proxy's HTTP and
 * SOCKS5 sockets (`egress.listenComputer`). Its isolation is `full` as root and `unprivileged`
 * otherwise (docs/computers.md, "Without root"); `roost up` prints which.
 */
import {
  chooseComputerProvider,
  createLocalProvider,
  createProcessProvider,
  detectHost,
  insidePaths,
  workerNodeOptions,
  prepareWorkerBuild,
  unprivilegedLimits,
  type ComputerProvider,
  type HostReport,
} from "../computers/index.ts";
import type { RoostConfig } from "../config/index.ts";
import {
  auditTo,
  createDestinationContext,
  createEgressProxy,
  parseEgressPolicy,
  parseUserEgressPolicy,
  type EgressPolicy,
  type EgressProxy,
} from "../egress/index.ts";
import type { Gateway } from "../gateway/index.ts";
import type { Logger } from "../log/index.ts";
import type { Store } from "../store/index.ts";
import {
  createVault,
  createVaultAuthority,
  swapAuditTo,
  type BrokeredSecrets,
} from "../vault/index.ts";

export interface ComputerRuntime {
  provider: ComputerProvider;
  /** Present with the isolated provider: every computer's way out. */
  egress: EgressProxy | undefined;
  /**
   * Validates a policy a user sets for their computer under this server's operator settings
   * (P8: a 400 that says why for rules that could only reach refused ranges).
   */
  parseUserPolicy(input: unknown): EgressPolicy;
  /** Apply a computer's stored policy to the proxy (on wake, and after a change). */
  applyPolicy(computerId: string): Promise<void>;
  close(): Promise<void>;
}

export interface ComputerRuntimeOptions {
  logger: Logger;
  /** Serves each local computer's gateway socket. */
  gateway: Gateway;
  /** Roost's own ports (API, Restate, service endpoint, store), which no computer may reach. */
  platformPorts: () => Iterable<number>;
  /**
   * The computers' brokered secrets, swapped in by the egress proxy (docs/vault.md); the secrets
   * store provides them. @default none: nothing is intercepted, every tunnel is untouched
   */
  brokeredSecrets?: BrokeredSecrets;
  /** The secrets redactor, applied to brokered hosts' response headers too. @default none */
  redact?: (text: string) => string;
  /** The host as `roost up` found it after preparing it (host-setup.ts); probed here when absent. */
  host?: HostReport;
}

export async function startComputerRuntime(
  config: RoostConfig,
  store: Store,
  options: ComputerRuntimeOptions,
): Promise<ComputerRuntime> {
  const { logger, gateway, platformPorts } = options;
  const searchPath = config.computers.toolsPath;
  const log = (message: string) => logger.info(message.replace(/^roost: /, ""));
  // Validated at start for either provider: a bad ROOST_EGRESS_ALLOW_PRIVATE stops the server.
  const context = createDestinationContext({
    allowPrivate: config.egress.allowPrivate,
    platformPorts,
  });
  const parseUserPolicy = (input: unknown) => parseUserEgressPolicy(input, context);
  const choice = chooseComputerProvider(
    config.computers.provider,
    options.host ?? (await detectHost({ searchPath })),
  );
  const workerBuild = await prepareWorkerBuild({ log });
  if (choice.kind === "process") {
    logger.warn(
      "computers use the `process` provider: bots' commands run as this server's user with NO isolation and NO egress policy. Use it only for development.",
    );
    if (choice.warning !== undefined) logger.warn(choice.warning);
    const provider = createProcessProvider({
      root: config.computers.root,
      log,
      ...(workerBuild === undefined ? {} : { workerEntry: workerBuild.entry }),
    });
    return {
      provider,
      egress: undefined,
      parseUserPolicy,
      applyPolicy: async () => undefined,
      close: () => provider.close(),
    };
  }

  const audit = auditTo(store, { logger });
  const authority = createVaultAuthority({ dir: config.vault.dir });
  const swapAudit = swapAuditTo(store);
  const vault = createVault({
    secrets: options.brokeredSecrets ?? { forComputer: () => Promise.resolve([]) },
    authority,
    upstreamCa: config.vault.upstreamCa,
    onSwap: swapAudit,
    ...(options.redact === undefined ? {} : { redact: options.redact }),
    logger,
  });
  const egress = createEgressProxy({
    onRequest: audit,
    intercept: vault,
    logger,
    allowPrivate: config.egress.allowPrivate,
    platformPorts,
  });
  const applyPolicy = async (computerId: string) => {
    const stored = await store.getNetworkPolicy(computerId);
    egress.setPolicy(
      computerId,
      stored === null ? { mode: "defaults-and-allowlist", allow: [] } : parseEgressPolicy(stored),
    );
  };
  if (choice.isolation === "unprivileged") {
    logger.warn(
      `computers are isolated without root (unprivileged: ${unprivilegedLimits}); every computer runs as this server's uid in a user namespace. Run Roost as root for full isolation.`,
    );
  }
  const provider = await createLocalProvider({
    dataDir: config.computers.root,
    limits: { diskBytes: config.computers.diskBytes },
    spares: config.computers.spares,
    ...(searchPath === undefined ? {} : { searchPath }),
    log,
    ...(workerBuild === undefined
      ? {}
      : {
          workerArgv: [
            insidePaths.node,
            ...workerNodeOptions,
            `${insidePaths.roost}/${workerBuild.relativeEntry}`,
          ],
        }),
    sockets: {
      gateway: (computerId, socketPath) => gateway.listenComputer(computerId, socketPath),
      egress: async (computerId, paths) => {
        await applyPolicy(computerId);
        const trust = await authority.trustFor(computerId);
        const listener = await egress.listenComputer(computerId, paths);
        return {
          trust,
          close: async () => {
            await listener.close();
            egress.removeComputer(computerId);
          },
        };
      },
    },
    onExit: (computerId, detail) => logger.warn("computer sandbox ended", { computerId, detail }),
  });
  return {
    provider,
    egress,
    parseUserPolicy,
    applyPolicy,
    async close() {
      await provider.close();
      await egress.close();
      await audit.flush();
      await swapAudit.flush();
    },
  };
}
