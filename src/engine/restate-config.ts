/**
 * The restate-server configuration Roost writes for its embedded engine.
 *
 * Invariants:
 *   C1 every listener (ingress, admin, node-to-node fabric) binds 127.0.0.1 only, over TCP only
 *      (no unix sockets: their paths under a deep data dir can exceed the 108-byte limit).
 *   C2 the node name is fixed (`roost`), so the data under `<dataDir>/restate/roost/` is found
 *      again after a hostname change.
 *   C3 an invocation whose service endpoint is down is retried practically forever, with the
 *      backoff capped at `retryMaxIntervalMs` (≤ 2 s by default), so the loop resumes promptly
 *      once the Node process is back.
 *   C4 the file is the single source of the server's settings: the child is started without
 *      `RESTATE_*` / `RUST_LOG` environment variables (see embedded-restate.ts, E6).
 *
 * restate-server silently ignores unknown keys, so every key here is checked against
 * `restate-server --dump-config` in restate-config.test.ts.
 */

/** Settings of the generated restate-server config file. */
export interface RestateServerConfig {
  /** restate's base dir; node data lands in `<baseDir>/roost/`. */
  baseDir: string;
  ingressPort: number;
  adminPort: number;
  nodePort: number;
  /** Handler inactivity timeout: no journal progress for this long → restate asks the handler to suspend. */
  inactivityTimeoutMs: number;
  /** After the inactivity timeout, how long restate waits before aborting the attempt (and retrying it). */
  abortTimeoutMs: number;
  /** First retry delay for a failed invocation attempt. */
  retryInitialIntervalMs: number;
  /** Cap of the retry delay. */
  retryMaxIntervalMs: number;
  /** Partitions created on first start only; ignored by an already provisioned data dir. */
  partitions: number;
  /** Total RocksDB memory budget of the server, in bytes. */
  rocksdbTotalMemoryBytes: number;
  /** The key the server signs its requests to service endpoints with (request-identity.ts, RI1). */
  requestIdentityPemFile?: string | undefined;
}

/** Fixed node name (C2). */
export const restateNodeName = "roost";

/**
 * "Forever" for the invocation retry policy: at a 2 s cap this is ~270 years of attempts.
 * restate has no TOML spelling for "unset" (absent means its default of 70), hence a large number.
 */
export const retryForeverAttempts = 4_294_967_295;

/** Defaults for the tunable parts of {@link RestateServerConfig}. */
export const restateConfigDefaults = {
  /** @default 5 min: a model call or tool step may legitimately run for minutes without a journal write. */
  inactivityTimeoutMs: 5 * 60_000,
  /** @default 30 min: so a single `ctx.run` may take up to ~35 min before it is aborted and retried. */
  abortTimeoutMs: 30 * 60_000,
  /** @default 100 ms */
  retryInitialIntervalMs: 100,
  /** @default 2 s (C3) */
  retryMaxIntervalMs: 2_000,
  /** @default 8: plenty for one node on a small machine; each partition costs memory and threads. */
  partitions: 8,
  /** @default 512 MiB (restate's own default is 2 GiB) */
  rocksdbTotalMemoryBytes: 512 * 1024 * 1024,
} as const;

/** Renders the TOML text of the config file. */
export function renderRestateConfig(config: RestateServerConfig): string {
  const lines = [
    "# Written by Roost at every start of the embedded engine; edits are overwritten.",
    "# See docs/decisions/0001-restate-embedded.md.",
    `node-name = ${tomlString(restateNodeName)}`, // C2
    `cluster-name = ${tomlString("roost")}`,
    `base-dir = ${tomlString(config.baseDir)}`,
    `listen-mode = ${tomlString("tcp")}`, // C1
    `bind-ip = ${tomlString("127.0.0.1")}`, // C1
    `bind-address = ${tomlString(`127.0.0.1:${config.nodePort}`)}`,
    `advertised-address = ${tomlString(`http://127.0.0.1:${config.nodePort}/`)}`,
    "auto-provision = true",
    `default-num-partitions = ${integer(config.partitions, "partitions")}`,
    "disable-telemetry = true",
    "log-disable-ansi-codes = true",
    `rocksdb-total-memory-size = ${tomlString(`${integer(config.rocksdbTotalMemoryBytes, "rocksdbTotalMemoryBytes")} B`)}`,
    "",
    "[default-retry-policy]", // C3
    `initial-interval = ${duration(config.retryInitialIntervalMs, "retryInitialIntervalMs")}`,
    "exponentiation-factor = 2.0",
    `max-interval = ${duration(config.retryMaxIntervalMs, "retryMaxIntervalMs")}`,
    `max-attempts = ${retryForeverAttempts}`,
    // Should the count ever run out, keep the invocation (resumable from the UI/CLI) rather than kill it.
    `on-max-attempts = ${tomlString("pause")}`,
    "",
    "[worker.invoker]",
    `inactivity-timeout = ${duration(config.inactivityTimeoutMs, "inactivityTimeoutMs")}`,
    `abort-timeout = ${duration(config.abortTimeoutMs, "abortTimeoutMs")}`,
    ...(config.requestIdentityPemFile === undefined
      ? []
      : [`request-identity-private-key-pem-file = ${tomlString(config.requestIdentityPemFile)}`]),
    "",
    "[admin]",
    `bind-address = ${tomlString(`127.0.0.1:${config.adminPort}`)}`, // C1
    "",
    "[ingress]",
    `bind-address = ${tomlString(`127.0.0.1:${config.ingressPort}`)}`, // C1
    "",
  ];
  return lines.join("\n");
}

function tomlString(value: string): string {
  // JSON string escaping is a subset of TOML basic-string escaping.
  return JSON.stringify(value);
}

function integer(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`engine: ${name} must be a positive integer, got ${value}`);
  }
  return value;
}

function duration(ms: number, name: string): string {
  return tomlString(`${integer(ms, name)}ms`);
}
