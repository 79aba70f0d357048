/**
 * Wiring of the web tools (docs/web-tools.md): the fetcher under the operator's destination
 * rules, the account's computer egress policy read at each call (WT1), the search provider of
 * the configuration (WT3), and saving raw bytes into an awake computer through its worker (WT4).
 */
import { createFilesClient, type WorkerCaller } from "../api/index.ts";
import type { RoostConfig } from "../config/index.ts";
import {
  auditTo,
  createDestinationContext,
  parseEgressPolicy,
  type EgressPolicy,
} from "../egress/index.ts";
import type { Logger } from "../log/index.ts";
import { displayWorkspacePath, workspacePathProblem } from "../protocol/index.ts";
import type { Store } from "../store/index.ts";
import type { ToolSource } from "../tools/index.ts";
import { createWebFetcher, createWebSearcher, createWebTools } from "../webtools/index.ts";
import type { WebFetcherOptions } from "../webtools/index.ts";

const defaultPolicy = parseEgressPolicy({ mode: "defaults-and-allowlist", allow: [] });

export interface WebToolsWiring {
  store: Store;
  gateway: WorkerCaller & {
    isConnected(computerId: string): boolean;
    /** Connected here or to another node (decision 0039). */
    connectedAnywhere?(computerId: string): Promise<boolean>;
  };
  providerKind: string;
  platformPorts: () => Iterable<number>;
  /** @default silent */
  logger?: Logger;
  /** Tests resolve names and route connections (WF1, WF2). */
  fetcher?: Pick<WebFetcherOptions, "resolve" | "connect">;
}

export function createWebToolSource(config: RoostConfig, wiring: WebToolsWiring): ToolSource {
  const { store, gateway } = wiring;
  const files = createFilesClient(gateway);
  const fetcher = createWebFetcher({
    destination: createDestinationContext({
      allowPrivate: config.egress.allowPrivate,
      platformPorts: wiring.platformPorts,
    }),
    maxBytes: config.webTools.fetchMaxBytes,
    timeoutMs: config.webTools.fetchTimeoutMs,
    ...wiring.fetcher,
  });
  const search = config.webTools.search;
  // WF6: web_fetch's hops in the computer's egress log, like the proxy's requests.
  const audit = auditTo(store, wiring.logger === undefined ? {} : { logger: wiring.logger });
  return createWebTools({
    onHop: (accountId, hop) => {
      void store
        .ensureComputer(accountId, wiring.providerKind)
        .then((computer) => audit({ computerId: computer.id, ...hop }))
        .catch((error: unknown) => wiring.logger?.warn("web_fetch audit failed", { error }));
    },
    fetcher,
    searcher: search === undefined ? undefined : createWebSearcher(search),
    policyFor: async (accountId): Promise<EgressPolicy> => {
      const computer = await store.ensureComputer(accountId, wiring.providerKind);
      const stored = await store.getNetworkPolicy(computer.id);
      return stored === null ? defaultPolicy : parseEgressPolicy(stored);
    },
    save: async (accountId, path, bytes, signal) => {
      const relative = path.replace(/^\/workspace(\/|$)/, "");
      const problem = workspacePathProblem(relative);
      if (problem !== undefined || relative === "")
        throw new Error(
          `save_to ${JSON.stringify(path)} is not a file path in /workspace (${problem ?? "it is the workspace itself"}); give one such as downloads/report.pdf.`,
        );
      const computer = await store.ensureComputer(accountId, wiring.providerKind);
      const connected =
        gateway.isConnected(computer.id) ||
        ((await gateway.connectedAnywhere?.(computer.id)) ?? false);
      if (!connected)
        throw new Error(
          "The computer is asleep, and web_fetch does not wake it to save a file. Run a command on the computer first (that wakes it), then fetch again, or fetch the page as text.",
        ); // WT4
      try {
        const saved = await files.upload(computer.id, relative, new Blob([bytes]).stream(), signal);
        return { path: displayWorkspacePath(saved.path), size: saved.size };
      } catch (error) {
        throw new Error(
          `Could not save to ${displayWorkspacePath(relative)}: ${(error as Error).message}`,
          { cause: error },
        );
      }
    },
  });
}
