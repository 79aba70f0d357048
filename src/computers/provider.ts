/**
 * The seam between the control plane and whatever runs computers. A provider knows how to give a
 * computer a durable disk and how to start and stop its sandbox with the worker inside; it does
 * not decide when (the control plane does) and does not snapshot (snapshots.ts does, around
 * sleep and wake). Every provider runs the shared contract (provider.contract.ts).
 *
 * Durable disk layout on the host, under `ComputerPaths.root`:
 *   home/        the user's home directory            (inside: $HOME)
 *   workspace/   the working directory                (inside: /workspace)
 *   worker/      the worker's id and done-log         (inside: the worker's state dir)
 */

export interface ComputerPaths {
  /** The computer's folder on the host; everything durable lives below it. */
  root: string;
  home: string;
  workspace: string;
  workerState: string;
}

export interface WakeRequest {
  /** Where the worker dials out to, e.g. ws://127.0.0.1:7700/v1/gateway. */
  gatewayUrl: string;
  /** A fresh worker token for this wake (short-lived; rotated on every wake). */
  workerToken: string;
  /** Extra environment for the user's processes (e.g. HTTP_PROXY). */
  env?: Record<string, string>;
}

export type ComputerRuntimeStatus = "running" | "stopped" | "missing";

/**
 * How the local provider isolates computers (docs/computers.md): `full` as root (a uid, cgroup
 * limits and a disk image per computer), `unprivileged` without root (a user namespace; no
 * per-computer uid, no memory, CPU or disk limits).
 */
export type LocalIsolation = "full" | "unprivileged";
/** How a provider isolates computers: the local provider's modes, or `none` (the process provider). */
export type ComputerIsolation = LocalIsolation | "none";

export interface ComputerProvider {
  readonly kind: "process" | "local";
  /** Whether the provider isolates computers from each other and from the host. */
  readonly isolated: boolean;
  /** How it isolates them. @default `full` when {@link isolated}, `none` otherwise */
  readonly isolation?: ComputerIsolation;
  paths(computerId: string): ComputerPaths;
  /** Allocate the durable disk. Idempotent. */
  create(computerId: string): Promise<ComputerPaths>;
  /** Start the sandbox and the worker in it. Resolves once started; the worker's hello comes through the gateway. */
  wake(computerId: string, request: WakeRequest): Promise<void>;
  /** Stop every process of the computer; the durable disk stays. Idempotent. */
  sleep(computerId: string): Promise<void>;
  /**
   * Runs `use` with the durable disk of a sleeping computer at hand (the snapshot after sleep),
   * for providers whose disk is there only while in use (local: a mounted image, detached at
   * sleep). Without it, `paths()` is always usable. `use` must not call the provider for the
   * same computer (the call runs in that computer's queue).
   */
  withDisk?<T>(computerId: string, use: (paths: ComputerPaths) => Promise<T>): Promise<T>;
  /** Stop it and delete its disk. */
  destroy(computerId: string): Promise<void>;
  status(computerId: string): Promise<ComputerRuntimeStatus>;
  /** Stop everything this provider started (server shutdown). */
  close(): Promise<void>;
}

/** A provider's isolation, for providers that do not say (older or test providers). */
export function isolationOf(
  provider: Pick<ComputerProvider, "isolated" | "isolation">,
): ComputerIsolation {
  return provider.isolation ?? (provider.isolated ? "full" : "none");
}
