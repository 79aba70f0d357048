/**
 * A computer's home host (decision 0040): the one node that runs the computer and holds its disk.
 * The control plane (control-plane.ts) decides; this module is what runs on the host itself, and
 * the Restate service through which the control plane reaches a home that is another node.
 *
 * Invariants:
 *   HOME1 only the home host snapshots a computer: before archiving its disk, a host checks the
 *         store's home (STORE10) and, when another host is the home, stops its sandbox and keeps
 *         its hands off the snapshot, the worker token and the manifest.
 *   HOME2 a host that becomes the home first restores the newest snapshot (its own copy is used
 *         only when its marker is that generation), then claims the home with a compare-and-set,
 *         then looks again for a snapshot made in between.
 *   HOME3 each node serves its host service under a name of its own (`roost_host_<node id>`), on
 *         a deployment of its own URL: Restate delivers a call for a home to that node and no
 *         other, and keeps it until the node answers.
 *   HOME4 (decision 0041) an API node with ROOST_COMPUTERS=remote never runs a computer: its
 *         control plane asks a computer host's service to wake it (`wake`), which restores,
 *         claims the home (HOME2), starts the sandbox and waits for its worker, all on the host.
 *         A host wakes only computers the store knows and that are hosted.
 */
import * as restate from "@restatedev/restate-sdk";
import { generateWorkerToken, hashToken } from "../auth/index.ts";
import type { Store } from "../store/index.ts";
import type { ComputerPaths, ComputerProvider, ComputerRuntimeStatus } from "./provider.ts";

/** What a host needs to stop and snapshot the computers it runs. */
export interface ComputerHostDependencies {
  nodeId: string;
  provider: ComputerProvider;
  store: Pick<Store, "getComputer" | "clearWorkerToken">;
  gateway: { disconnect(computerId: string, reason?: string): Promise<void> };
  snapshots?: {
    save(computerId: string, paths: ComputerPaths): Promise<{ generation: number } | void>;
  };
  /** What a wake asked of this host needs (HOME4); without it the host refuses wakes. */
  waking?: HostWakeDependencies;
}

/** HOME4: what a host needs to wake a computer for another node's control plane. */
export interface HostWakeDependencies {
  store: Pick<Store, "claimComputerHome" | "setWorkerToken">;
  restoreIfNeeded?(
    computerId: string,
    paths: ComputerPaths,
    options: { atLeastGeneration: number | null },
  ): Promise<void>;
  waitForWorker(computerId: string, timeoutMs: number): Promise<unknown>;
  gatewayUrl: string;
  computerEnv?: (computerId: string) => Promise<Record<string, string>> | Record<string, string>;
  wakeTimeoutMs: number;
  workerTokenTtlMs: number;
}

/** HOME4: a wake asked of a host: the home the control plane knew and the generation it saved. */
export interface HostWakeRequest {
  computerId: string;
  previousHome: string | null;
  atLeastGeneration: number | null;
}

/** What a stop did. `savedGeneration` is null when no snapshot was taken. */
export interface HostStopResult {
  host: string;
  savedGeneration: number | null;
  /** Why no snapshot was taken, when none was. */
  skipped: string | null;
}

/** The operations only a computer's home can do. */
export interface ComputerHost {
  readonly nodeId: string;
  /** Stops the computer's sandbox here and, while this node is its home, snapshots its disk (HOME1). */
  stop(computerId: string): Promise<HostStopResult>;
  status(computerId: string): Promise<ComputerRuntimeStatus>;
  /** HOME4: restores, claims the home, starts the sandbox here and waits for its worker. */
  wake(request: HostWakeRequest): Promise<{ host: string }>;
}

export function createComputerHost(deps: ComputerHostDependencies): ComputerHost {
  return {
    nodeId: deps.nodeId,
    async stop(computerId) {
      // The id comes from a Restate call: only a computer the store knows reaches the provider.
      const computer = await deps.store.getComputer(computerId);
      if (computer === undefined)
        throw new restate.TerminalError(
          `computer host ${deps.nodeId}: no computer ${JSON.stringify(computerId)}`,
        );
      await deps.gateway.disconnect(computerId, "computer is going to sleep");
      await deps.provider.sleep(computerId);
      const home = computer.homeHost;
      // A computer woken before homes were recorded has no home yet: whoever runs it holds its disk.
      if (home !== null && home !== deps.nodeId) {
        // HOME1: another host took over; this copy is stale and must never become a snapshot.
        return {
          host: deps.nodeId,
          savedGeneration: null,
          skipped: `${home} is the computer's home, not ${deps.nodeId}`,
        };
      }
      await deps.store.clearWorkerToken(computerId); // C3
      const snapshots = deps.snapshots;
      if (snapshots === undefined)
        return { host: deps.nodeId, savedGeneration: null, skipped: null };
      let saved: { generation: number } | void = undefined;
      // A provider that detaches the disk at sleep attaches it for the snapshot.
      const save = async (paths: ComputerPaths) => {
        saved = await snapshots.save(computerId, paths);
      };
      await (deps.provider.withDisk?.(computerId, save) ?? save(deps.provider.paths(computerId)));
      const generation = (saved as { generation: number } | undefined)?.generation ?? null;
      return { host: deps.nodeId, savedGeneration: generation, skipped: null };
    },
    async status(computerId) {
      if ((await deps.store.getComputer(computerId)) === undefined)
        throw new restate.TerminalError(
          `computer host ${deps.nodeId}: no computer ${JSON.stringify(computerId)}`,
        );
      return deps.provider.status(computerId);
    },
    async wake({ computerId, previousHome, atLeastGeneration }) {
      const waking = deps.waking;
      if (waking === undefined)
        throw new restate.TerminalError(`computer host ${deps.nodeId} does not wake computers`);
      const computer = await deps.store.getComputer(computerId);
      if (computer === undefined)
        throw new restate.TerminalError(
          `computer host ${deps.nodeId}: no computer ${JSON.stringify(computerId)}`,
        );
      if (computer.kind === "self-hosted")
        throw new restate.TerminalError(
          `computer host ${deps.nodeId}: computer ${computerId} is self-hosted; its owner's machine runs it`,
        );
      const here = deps.nodeId;
      let claimed = false;
      try {
        const paths = await deps.provider.create(computerId);
        await waking.restoreIfNeeded?.(computerId, paths, { atLeastGeneration }); // HOME2
        if (previousHome !== here) {
          const won = await waking.store.claimComputerHome(computerId, previousHome, here);
          // A retried wake finds its own earlier claim.
          const current = won ? here : (await deps.store.getComputer(computerId))?.homeHost;
          if (current !== here)
            throw new restate.TerminalError(
              `another host (${current ?? "none"}) became the computer's home while ${here} was taking it over from ${previousHome ?? "none"}`,
            );
          // A sleep on the old home may have saved a newer generation while this one restored.
          await waking.restoreIfNeeded?.(computerId, deps.provider.paths(computerId), {
            atLeastGeneration,
          });
        }
        claimed = true;
        const token = generateWorkerToken(); // C3, C5: never leaves this step
        await waking.store.setWorkerToken(
          computerId,
          hashToken(token),
          Date.now() + waking.workerTokenTtlMs,
        );
        await deps.provider.wake(computerId, {
          gatewayUrl: waking.gatewayUrl,
          workerToken: token,
          env: (await waking.computerEnv?.(computerId)) ?? {},
        });
        await waking.waitForWorker(computerId, waking.wakeTimeoutMs);
        return { host: here };
      } catch (error) {
        await deps.provider.sleep(computerId).catch(() => undefined);
        // Only the home's token is this wake's; a lost claim leaves the winner's alone.
        if (claimed) await deps.store.clearWorkerToken(computerId).catch(() => undefined);
        throw error;
      }
    },
  };
}

/** HOME3: the Restate service name of a node's host service. */
export function hostServiceName(nodeId: string): string {
  return `roost_host_${nodeId.replace(/[^A-Za-z0-9_]/g, "_")}`;
}

/** Path under the node's service URL where its host service is served (its own deployment, HOME3). */
export const hostServicePath = "/host";

/** HOME3: the node's host service, called by the control plane of any node. */
export function createComputerHostService(host: ComputerHost) {
  return restate.service({
    name: hostServiceName(host.nodeId),
    handlers: {
      stop: async (ctx: restate.Context, request: { computerId: string }) =>
        ctx.run("stop", () => host.stop(request.computerId), { maxRetryAttempts: 3 }),
      status: async (
        _ctx: restate.Context,
        request: { computerId: string },
      ): Promise<ComputerRuntimeStatus> => host.status(request.computerId),
      // HOME4: one attempt; the control plane records a failed wake and the next wake tries again.
      wake: async (ctx: restate.Context, request: HostWakeRequest) =>
        ctx.run(
          "wake",
          () =>
            host.wake({
              computerId: String(request?.computerId ?? ""),
              previousHome: request?.previousHome ?? null,
              atLeastGeneration: request?.atLeastGeneration ?? null,
            }),
          { maxRetryAttempts: 1 },
        ),
    },
  });
}
