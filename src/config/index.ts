/**
 * Configuration is resolved once at start-up: flag > environment > default. Nothing else in
 * Roost reads `process.env`; everything receives the resolved, validated `RoostConfig`.
 * Documented in docs/configuration.md (keep the two in step).
 */
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import { ConfigError } from "../errors/index.ts";

export interface ModelProvidersConfig {
  /** Model used by bots that name none, `provider:model` or `demo`. */
  defaultModel: string | undefined;
  openai: { apiKey: string; baseUrl: string | undefined } | undefined;
  anthropic: { apiKey: string; baseUrl: string | undefined } | undefined;
  xai: { apiKey: string; baseUrl: string | undefined } | undefined;
  openaiCompatible: { baseUrl: string; apiKey: string | undefined } | undefined;
}

export type RestateConfig =
  | {
      mode: "embedded";
      ingressPort: number;
      adminPort: number;
      nodePort: number;
    }
  | {
      mode: "external";
      ingressUrl: string;
      adminUrl: string;
      /**
       * Public keys (`publickeyv1_…`) of the external Restate's request identity: the service
       * endpoint accepts only requests signed with one of them. Empty: unsigned requests are
       * accepted, which only a loopback bind allows.
       */
      identityKeys: string[];
    };

export type StoreConfig = { kind: "sqlite"; path: string } | { kind: "postgres"; url: string };

/** This node's identity as a computer host (docs/operations.md, decision 0040). */
export interface NodeConfig {
  /**
   * The node's id, recorded as the home host of the computers it runs; must stay the same
   * across restarts of this node and differ from every other node's.
   * @default the id kept in `<dataDir>/node-id` (made on first start)
   */
  id: string | undefined;
  /**
   * URL at which Restate reaches this node's own endpoint (the computer-host service), when
   * ROOST_SERVICE_URL is a load balancer. @default the service URL
   */
  serviceUrl: string | undefined;
  /** How long a call to a computer's home host may go unanswered before the computer is treated as lost there. @default 30000 */
  homeTimeoutMs: number;
  /**
   * Where this node's computers run (decision 0041): `local` (this node runs them) or `remote`
   * (an API node beside `roost computer-host` nodes: it never runs a computer itself).
   * @default local (ROOST_COMPUTERS)
   */
  computers: "local" | "remote";
  /** With `remote`: the computer hosts' node ids, from ROOST_COMPUTER_HOSTS (comma-separated). */
  computerHosts: string[];
}

export interface RoostConfig {
  /** Everything the embedded mode keeps lives here. @default ./.roost */
  dataDir: string;
  /** Address the API, events stream, web app and gateway listen on. @default 127.0.0.1 */
  host: string;
  /** One port for API, events, web app and gateway. @default 7700 */
  port: number;
  /** Port of the durable-loop service endpoint that Restate calls. @default 7790 */
  servicePort: number;
  /** URL Restate uses to reach the service endpoint. @default http://127.0.0.1:{servicePort} */
  serviceUrl: string;
  /**
   * Address the service endpoint listens on. Anything but loopback needs the engine's request
   * identity (embedded: always on; external: ROOST_RESTATE_IDENTITY_KEYS). @default 127.0.0.1
   */
  serviceHost: string;
  /** This node as a computer host (decision 0040). */
  node: NodeConfig;
  /**
   * At shutdown, how long running loop invocations may take to finish before they are handed
   * back to Restate (which retries them from their journal). @default 5000
   */
  shutdownGraceMs: number;
  /**
   * The URL users reach this server at, given to self-hosted workers (`roost worker --server`)
   * when it differs from the address a request came in on (TLS in front, a proxy). @default none
   */
  publicUrl: string | undefined;
  /**
   * This node's internal endpoint for node-to-node forwarding (decision 0039): calls to a worker
   * connected to another node go there. Undefined (no ROOST_NODE_URL): one node, no forwarding.
   */
  forwarding: ForwardingConfig | undefined;
  store: StoreConfig;
  restate: RestateConfig;
  models: ModelProvidersConfig;
  /** How long a conversation's loop waits for follow-up messages after a reply. @default 120000 */
  followUpWindowMs: number;
  /** Largest accepted request body. @default 1048576 */
  maxBodyBytes: number;
  /** Retries of a failed model call inside one journaled step. @default 4 */
  modelAttempts: number;
  /** How long a call waits for the owner's approval before it is denied (docs/approvals.md). @default 600000 */
  approvalTimeoutMs: number;
  computers: ComputersConfig;
  egress: EgressConfig;
  vault: VaultConfig;
  log: LogConfig;
  /** The users' timezone (IANA name) until accounts have their own; the prompt states the date in it. @default UTC */
  timezone: string;
  rateLimits: RateLimitsConfig;
  /** Run the memory pass after every turn (the bot's model reads the turn and updates memory). @default true */
  memoryPass: boolean;
  /** After a conversation's first reply, ask the bot's model for a short title (docs/chat.md "Titles"). @default true */
  modelTitles: boolean;
  /**
   * Let a Slack link's `apiUrl` be plain http (tests, a gateway on the same host); otherwise it
   * must be https (docs/slack.md). @default false
   */
  slackInsecureApiUrl: boolean;
  compaction: CompactionConfig;
  previews: PreviewsConfig;
  routines: RoutinesConfig;
  results: ResultsConfig;
  /** Helpers (docs/helpers.md). */
  helpers: HelpersConfig;
  /** The price table's own prices over the defaults (docs/usage.md#prices). @default none */
  prices: PricesConfig;
  /** Secrets (docs/secrets.md). */
  secrets: SecretsConfig;
  /** `web_search` and `web_fetch` (docs/web-tools.md). */
  webTools: WebToolsConfig;
}

/** Node-to-node forwarding (docs/operations.md, "Calls reach the worker wherever it is connected"). */
export interface ForwardingConfig {
  /** How the other nodes reach this one's internal endpoint, e.g. http://10.0.0.5:7792. */
  url: string;
  /** Address the internal endpoint listens on. @default 127.0.0.1 */
  host: string;
  /** @default 7792 */
  port: number;
  /** The secret every node shares (ROOST_NODE_SECRET, at least 32 characters). */
  secret: string;
}

/** The server's web tools (docs/web-tools.md). */
export interface WebToolsConfig {
  /** The search provider; undefined: `web_search` is not offered. @default none */
  search:
    | {
        provider: "searxng" | "brave" | "tavily";
        /** SearXNG's URL; for Brave and Tavily their API's (overridable for tests and proxies). */
        baseUrl: string;
        apiKey: string | undefined;
      }
    | undefined;
  /** Bytes of a fetched body kept at most. @default 5000000 */
  fetchMaxBytes: number;
  /** One deadline for a whole fetch, redirects included. @default 20000 */
  fetchTimeoutMs: number;
}

/** Secrets (docs/secrets.md). */
export interface SecretsConfig {
  /**
   * The key that seals secret values (32 bytes, base64), from `ROOST_SECRETS_KEY`; every node of a
   * scale-mode deployment needs the same one. @default the data dir's `secrets-key` file (0600)
   */
  key: string | undefined;
}

/** Routines (docs/routines.md). */
export interface RoutinesConfig {
  /** Runs of one routine are at least this far apart; lower it only for tests. @default 300000 (5 min) */
  minIntervalMs: number;
  /** A scheduled run that starts later than this after its time is a misfire. @default 60000 */
  misfireGraceMs: number;
  /** `catch_up` runs at most this many missed runs; the rest are recorded missed. @default 5 */
  maxCatchUp: number;
  /** Days without the owner's activity after which scheduled routines pause. @default 14 */
  absenceMs: number;
  /** Largest webhook body. @default 65536 */
  webhookMaxBodyBytes: number;
  /** Webhook calls per minute per routine, per server node. @default 60 */
  webhookPerMinute: number;
}

/** Bot-to-bot messages and the owner's webhooks (docs/results.md). */
export interface ResultsConfig {
  /** Bot-to-bot messages in one chain, counted from the first (ROOST_BOT_MESSAGE_MAX_HOPS). @default 4 */
  botMessageMaxHops: number;
  /** Attempts of one webhook delivery to the owner's endpoint. @default 6 */
  webhookAttempts: number;
  /** Wait before the first retry; it doubles each time (at most 10 min). @default 5000 */
  webhookRetryMs: number;
}

/** Helpers: sub-agents a bot starts (docs/helpers.md). */
export interface HelpersConfig {
  /** How deep helpers nest (ROOST_HELPERS_MAX_DEPTH; 0 turns helpers off). @default 1 */
  maxDepth: number;
  /** Helpers of one conversation running at once (ROOST_HELPERS_MAX_RUNNING). @default 4 */
  maxRunning: number;
}

/** A model's price per million tokens, in the table's currency. */
export interface ModelPrice {
  input: number;
  output: number;
  /** Input tokens read from the provider's cache. @default the input price */
  cachedInput?: number;
}

/** ROOST_PRICES: prices by exact model spec; `null` removes a default price. */
export interface PricesConfig {
  /** @default "USD" */
  currency: string;
  models: Record<string, ModelPrice | null>;
}

/** Port previews (docs/computers.md#port-previews). */
export interface PreviewsConfig {
  /**
   * Base URL of the preview hosts, e.g. https://preview.example.com: a browser link opens
   * https://p<port>-<label>.preview.example.com (a wildcard DNS name and certificate for it).
   * Unset: links work for a browser on the server's own host, as http://p<port>-<label>.localhost.
   */
  url: string | undefined;
  /** How long a browser link opens its preview. @default 300000 (5 min) */
  linkTtlMs: number;
  /** How long the cookie a link sets keeps the preview open. @default 3600000 (1 h) */
  sessionTtlMs: number;
  /** Preview connections (tunnels) open at once per computer. @default 32 */
  maxConnectionsPerComputer: number;
  /** A preview connection without data either way for this long is closed. @default 300000 (5 min) */
  idleTimeoutMs: number;
}

/** When long conversations are summarised (src/loop/compaction.ts). */
export interface CompactionConfig {
  /** Share of the model's context window the history may fill before it is compacted. @default 0.6 */
  share: number;
  /** After the follow-up window, compact from this share already. @default 0.3 */
  idleShare: number;
  /** User messages kept verbatim after the summary. @default 20 */
  keepMessages: number;
  /** A fixed budget in tokens instead of the share. */
  budgetTokens?: number;
}

/** The API's limits, counted by each server node on its own (docs/api.md#rate-limits). */
export interface RateLimitsConfig {
  /** Requests per minute per API token; 0 turns the request limit off. @default 3000 */
  requestsPerMinute: number;
  /** Requests a token may make at once before the per-minute rate applies. @default 300 */
  requestBurst: number;
  /** Event streams an account may hold open at once. @default 20 */
  eventStreamsPerAccount: number;
}

export interface EgressConfig {
  /**
   * Private ranges (RFC 1918, 100.64.0.0/10, fc00::/7) computers may reach when their own policy
   * has an IP rule for them. Never loopback, link-local or Roost's own ports. @default none
   */
  allowPrivate: string[];
}

/** The vault at the network boundary (docs/vault.md). */
export interface VaultConfig {
  /** Where each computer's CA lives (key mode 0600). @default `<dataDir>/vault` */
  dir: string;
  /**
   * Certificates (PEM, one entry per certificate) trusted for upstreams of brokered hosts besides
   * Node's bundled public roots, read from ROOST_VAULT_UPSTREAM_CA_FILE at start. @default none
   */
  upstreamCa: string[];
}

export interface LogConfig {
  /** @default info */
  level: "debug" | "info" | "warn" | "error" | "silent";
  /** `auto`: `pretty` when the log goes to a terminal, `json` otherwise. @default auto */
  format: "auto" | "json" | "pretty";
}

export interface ComputersConfig {
  /** `auto` picks `local` where the host allows isolation and stops with a clear message otherwise. @default auto */
  provider: "auto" | "local" | "process";
  /** Computers' durable disks live here. @default $ROOST_DATA_DIR/computers */
  root: string;
  /**
   * Whether `roost up` installs the system packages the local provider needs and lacks (as root,
   * with apt-get: bubblewrap, socat, …) before it starts (ROOST_INSTALL_SYSTEM_PACKAGES=0 turns it off). @default true
   */
  installSystemPackages: boolean;
  /**
   * PATH-style folders where Roost looks for the host tools it runs (bwrap, socat, nsenter, the
   * disk tools, apt-get), instead of the usual sbin and bin folders. @default undefined (those folders)
   */
  toolsPath: string | undefined;
  /**
   * Each local computer's disk limit (home, workspace, worker state), in bytes: the size of its
   * disk image, which takes on the host only what it holds. A change applies at each computer's
   * next wake. @default 10737418240 (10 GiB)
   */
  diskBytes: number;
  /**
   * Spare sandboxes kept ready, with Node and the worker already started, so that a wake skips
   * both (docs/computers.md, "Spare sandboxes"); only as root. 0 turns them off. @default 1
   */
  spares: number;
  /** Screens (one per bot: a display, its VNC server, its browser) a computer runs at most. @default 4 */
  screensMax: number;
  /** A computer sleeps this long after its last activity (never while a turn holds it). @default 300000 */
  idleSleepMs: number;
  /** How long a wake waits for the worker's hello. @default 60000 */
  wakeTimeoutMs: number;
  /** Lifetime of a worker token (a new one is issued on every wake). @default 86400000 */
  workerTokenTtlMs: number;
  /** URL workers dial, when it is not this server's own address (e.g. behind a proxy). */
  gatewayUrl: string | undefined;
  blobs: BlobStoreConfig;
  /** Snapshot generations kept restorable. @default 5 */
  snapshotKeep: number;
  /** zstd level of snapshots. @default 1 */
  snapshotCompressionLevel: number;
}

export type BlobStoreConfig =
  | { kind: "local"; dir: string }
  | {
      kind: "s3";
      endpoint: string | undefined;
      bucket: string;
      region: string;
      accessKeyId: string | undefined;
      secretAccessKey: string | undefined;
      forcePathStyle: boolean | undefined;
      prefix: string;
    };

export type Flags = Record<string, string | boolean | undefined>;
export type Environment = Record<string, string | undefined>;

interface Source {
  flags: Flags;
  env: Environment;
}

function resolveNode(source: Source): NodeConfig {
  const id = pick(source, "node-id", "ROOST_NODE_ID");
  if (id !== undefined && !/^[A-Za-z0-9_-]{1,40}$/.test(id)) {
    throw new ConfigError(
      `ROOST_NODE_ID must be 1–40 letters, digits, "_" or "-" (it names this node's Restate service), got ${JSON.stringify(id)}`,
    );
  }
  const computers = pick(source, "", "ROOST_COMPUTERS") ?? "local";
  if (computers !== "local" && computers !== "remote")
    throw new ConfigError(
      `ROOST_COMPUTERS must be "local" (this node runs computers) or "remote" (computer hosts run them; list their ROOST_NODE_IDs in ROOST_COMPUTER_HOSTS), got ${JSON.stringify(computers)}`,
    );
  const computerHosts = (pick(source, "", "ROOST_COMPUTER_HOSTS") ?? "")
    .split(",")
    .map((host) => host.trim())
    .filter((host) => host !== "");
  for (const host of computerHosts)
    if (!/^[A-Za-z0-9_-]{1,40}$/.test(host))
      throw new ConfigError(
        `ROOST_COMPUTER_HOSTS lists node ids (each host's ROOST_NODE_ID: 1–40 letters, digits, "_" or "-"), comma-separated; got ${JSON.stringify(host)}`,
      );
  if (computers === "remote" && computerHosts.length === 0)
    throw new ConfigError(
      "ROOST_COMPUTERS=remote needs ROOST_COMPUTER_HOSTS: the ROOST_NODE_ID of each `roost computer-host`, comma-separated (e.g. ROOST_COMPUTER_HOSTS=host-1,host-2)",
    );
  if (computers === "local" && computerHosts.length > 0)
    throw new ConfigError(
      "ROOST_COMPUTER_HOSTS is only read with ROOST_COMPUTERS=remote: set that too, or unset ROOST_COMPUTER_HOSTS",
    );
  return {
    id,
    computers,
    computerHosts,
    serviceUrl: url(source, "node-service-url", "ROOST_NODE_SERVICE_URL"),
    homeTimeoutMs: integer(source, "", "ROOST_HOME_TIMEOUT_MS", 30_000, {
      min: 1000,
      max: 3600_000,
    }),
  };
}

function pick(source: Source, flag: string, envName: string): string | undefined {
  const fromFlag = source.flags[flag];
  if (typeof fromFlag === "string" && fromFlag !== "") return fromFlag;
  const fromEnv = source.env[envName];
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  return undefined;
}

function integer(
  source: Source,
  flag: string,
  envName: string,
  fallback: number,
  { min, max }: { min: number; max: number },
): number {
  const raw = pick(source, flag, envName);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(
      `${envName}${flag === "" ? "" : ` (--${flag})`} must be a whole number between ${min} and ${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

function boolean(source: Source, flag: string, envName: string, fallback: boolean): boolean {
  const raw = pick(source, flag, envName);
  if (raw === undefined) return fallback;
  const value = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(value)) return true;
  if (["0", "false", "no", "off"].includes(value)) return false;
  throw new ConfigError(
    `${envName} (--${flag}) must be 1 or 0 (also true/false, yes/no, on/off), got ${JSON.stringify(raw)}`,
  );
}

function url(source: Source, flag: string, envName: string): string | undefined {
  const raw = pick(source, flag, envName);
  if (raw === undefined) return undefined;
  try {
    const parsed = new URL(raw);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error("scheme");
  } catch {
    throw new ConfigError(
      `${envName} (--${flag}) must be an http(s) URL, got ${JSON.stringify(raw)}`,
    );
  }
  return raw.replace(/\/+$/, "");
}

function resolvePublicUrl(source: Source): string | undefined {
  const raw = pick(source, "", "ROOST_PUBLIC_URL");
  if (raw === undefined) return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(raw);
  } catch {
    parsed = undefined;
  }
  if (
    parsed === undefined ||
    (parsed.protocol !== "http:" && parsed.protocol !== "https:") ||
    parsed.search !== "" ||
    parsed.hash !== ""
  ) {
    throw new ConfigError(
      `ROOST_PUBLIC_URL must be the http(s) URL users reach Roost at, e.g. https://roost.example.com, got ${JSON.stringify(raw)}`,
    );
  }
  return raw.replace(/\/+$/, "");
}

function resolveComputers(source: Source, dataDir: string): ComputersConfig {
  const provider = pick(source, "computer-provider", "ROOST_COMPUTER_PROVIDER") ?? "auto";
  if (provider !== "auto" && provider !== "local" && provider !== "process") {
    throw new ConfigError(
      `ROOST_COMPUTER_PROVIDER must be "auto", "local" or "process", got ${JSON.stringify(provider)}`,
    );
  }
  const gatewayUrl = pick(source, "gateway-url", "ROOST_GATEWAY_URL");
  if (gatewayUrl !== undefined && !/^wss?:\/\//.test(gatewayUrl)) {
    throw new ConfigError(
      `ROOST_GATEWAY_URL must be a ws:// or wss:// URL, got ${JSON.stringify(gatewayUrl)}`,
    );
  }
  const toolsPath = pick(source, "tools-path", "ROOST_TOOLS_PATH");
  if (
    toolsPath !== undefined &&
    toolsPath.split(":").some((folder) => folder !== "" && !folder.startsWith("/"))
  ) {
    throw new ConfigError(
      `ROOST_TOOLS_PATH (--tools-path) is a colon-separated list of absolute folders such as /usr/local/bin:/usr/bin, got ${JSON.stringify(toolsPath)}`,
    );
  }
  return {
    provider,
    root: resolvePath(
      pick(source, "computers-dir", "ROOST_COMPUTERS_DIR") ?? `${dataDir}/computers`,
    ),
    installSystemPackages: boolean(
      source,
      "install-system-packages",
      "ROOST_INSTALL_SYSTEM_PACKAGES",
      true,
    ),
    toolsPath,
    diskBytes: integer(source, "computer-disk-bytes", "ROOST_COMPUTER_DISK_BYTES", 10 * 1024 ** 3, {
      min: 32 * 1024 ** 2,
      max: 16 * 1024 ** 4,
    }),
    spares: integer(source, "computer-spares", "ROOST_COMPUTER_SPARES", 1, { min: 0, max: 4 }),
    screensMax: integer(source, "screens-max", "ROOST_SCREENS_MAX", 4, { min: 1, max: 32 }),
    idleSleepMs: integer(source, "idle-sleep-ms", "ROOST_IDLE_SLEEP_MS", 300_000, {
      min: 1000,
      max: 7 * 24 * 3600_000,
    }),
    wakeTimeoutMs: integer(source, "wake-timeout-ms", "ROOST_WAKE_TIMEOUT_MS", 60_000, {
      min: 1000,
      max: 600_000,
    }),
    workerTokenTtlMs: integer(
      source,
      "worker-token-ttl-ms",
      "ROOST_WORKER_TOKEN_TTL_MS",
      86_400_000,
      {
        min: 60_000,
        max: 30 * 86_400_000,
      },
    ),
    gatewayUrl,
    blobs: resolveBlobs(source, dataDir),
    snapshotKeep: integer(source, "snapshot-keep", "ROOST_SNAPSHOT_KEEP", 5, { min: 1, max: 1000 }),
    snapshotCompressionLevel: integer(
      source,
      "snapshot-compression-level",
      "ROOST_SNAPSHOT_COMPRESSION_LEVEL",
      1,
      {
        min: 1,
        max: 19,
      },
    ),
  };
}

function resolveBlobs(source: Source, dataDir: string): BlobStoreConfig {
  const kind = pick(source, "blob-store", "ROOST_BLOB_STORE") ?? "local";
  if (kind === "local")
    return {
      kind,
      dir: resolvePath(pick(source, "blob-dir", "ROOST_BLOB_DIR") ?? `${dataDir}/blobs`),
    };
  if (kind !== "s3")
    throw new ConfigError(`ROOST_BLOB_STORE must be "local" or "s3", got ${JSON.stringify(kind)}`);
  const bucket = pick(source, "s3-bucket", "ROOST_S3_BUCKET");
  if (bucket === undefined)
    throw new ConfigError(
      "ROOST_BLOB_STORE=s3 needs a bucket: set ROOST_S3_BUCKET (the bucket must exist)",
    );
  const accessKeyId = pick(source, "", "ROOST_S3_ACCESS_KEY_ID");
  const secretAccessKey = pick(source, "", "ROOST_S3_SECRET_ACCESS_KEY");
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ConfigError(
      "set both ROOST_S3_ACCESS_KEY_ID and ROOST_S3_SECRET_ACCESS_KEY, or neither (to use the AWS default credentials)",
    );
  }
  const pathStyle = pick(source, "s3-force-path-style", "ROOST_S3_FORCE_PATH_STYLE");
  if (pathStyle !== undefined && pathStyle !== "true" && pathStyle !== "false") {
    throw new ConfigError(
      `ROOST_S3_FORCE_PATH_STYLE must be "true" or "false", got ${JSON.stringify(pathStyle)}`,
    );
  }
  return {
    kind,
    endpoint: url(source, "s3-endpoint", "ROOST_S3_ENDPOINT"),
    bucket,
    region: pick(source, "s3-region", "ROOST_S3_REGION") ?? "us-east-1",
    accessKeyId,
    secretAccessKey,
    forcePathStyle: pathStyle === undefined ? undefined : pathStyle === "true",
    prefix: pick(source, "s3-prefix", "ROOST_S3_PREFIX") ?? "",
  };
}

/** Whether `host` only takes connections from this machine. */
function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Resolve and validate the whole configuration. Throws ConfigError with a fix-it message. */
export function resolveConfig(flags: Flags = {}, env: Environment = {}): RoostConfig {
  const source: Source = { flags, env };
  const dataDir = resolvePath(pick(source, "data-dir", "ROOST_DATA_DIR") ?? ".roost");
  const host = pick(source, "host", "ROOST_HOST") ?? "127.0.0.1";
  const port = integer(source, "port", "ROOST_PORT", 7700, { min: 0, max: 65535 });
  const servicePort = integer(source, "service-port", "ROOST_SERVICE_PORT", 7790, {
    min: 0,
    max: 65535,
  });
  const serviceUrl =
    url(source, "service-url", "ROOST_SERVICE_URL") ?? `http://127.0.0.1:${servicePort}`;
  const serviceHost = pick(source, "service-host", "ROOST_SERVICE_HOST") ?? "127.0.0.1";
  const shutdownGraceMs = integer(source, "", "ROOST_SHUTDOWN_GRACE_MS", 5000, {
    min: 0,
    max: 600_000,
  });

  const nodeUrl = url(source, "", "ROOST_NODE_URL");
  let forwarding: ForwardingConfig | undefined;
  if (nodeUrl !== undefined) {
    const secret = pick(source, "", "ROOST_NODE_SECRET");
    if (secret === undefined || secret.length < 32)
      throw new ConfigError(
        "ROOST_NODE_URL needs ROOST_NODE_SECRET: the same secret of at least 32 characters on every node (e.g. `openssl rand -base64 32`), which node-to-node requests must carry",
      );
    forwarding = {
      url: nodeUrl.replace(/\/+$/, ""),
      host: pick(source, "", "ROOST_NODE_HOST") ?? "127.0.0.1",
      port: integer(source, "", "ROOST_NODE_PORT", 7792, { min: 0, max: 65535 }),
      secret,
    };
  }

  const storeKind = pick(source, "store", "ROOST_STORE") ?? "sqlite";
  let store: StoreConfig;
  if (storeKind === "sqlite") {
    store = {
      kind: "sqlite",
      path: pick(source, "sqlite-path", "ROOST_SQLITE_PATH") ?? `${dataDir}/roost.db`,
    };
  } else if (storeKind === "postgres") {
    const databaseUrl = pick(source, "database-url", "ROOST_DATABASE_URL");
    if (databaseUrl === undefined) {
      throw new ConfigError(
        "ROOST_STORE=postgres needs a connection string: set ROOST_DATABASE_URL (e.g. postgres://user@127.0.0.1:5432/roost)",
      );
    }
    store = { kind: "postgres", url: databaseUrl };
  } else {
    throw new ConfigError(
      `ROOST_STORE must be "sqlite" or "postgres", got ${JSON.stringify(storeKind)}`,
    );
  }

  const ingressUrl = url(source, "restate-ingress-url", "ROOST_RESTATE_INGRESS_URL");
  const adminUrl = url(source, "restate-admin-url", "ROOST_RESTATE_ADMIN_URL");
  let restate: RestateConfig;
  if (ingressUrl !== undefined || adminUrl !== undefined) {
    if (ingressUrl === undefined || adminUrl === undefined) {
      throw new ConfigError(
        "an external Restate needs both ROOST_RESTATE_INGRESS_URL and ROOST_RESTATE_ADMIN_URL (set both, or neither to run the embedded one)",
      );
    }
    const identityKeys = (pick(source, "", "ROOST_RESTATE_IDENTITY_KEYS") ?? "")
      .split(",")
      .map((key) => key.trim())
      .filter((key) => key !== "");
    for (const key of identityKeys) {
      if (!/^publickeyv1_[1-9A-HJ-NP-Za-km-z]{40,50}$/.test(key))
        throw new ConfigError(
          `ROOST_RESTATE_IDENTITY_KEYS holds ${JSON.stringify(key)}, which is not a Restate request identity public key: give the publickeyv1_… keys restate-server logs at start, separated by commas (docs/operations.md, "Scale mode")`,
        );
    }
    if (identityKeys.length === 0 && !isLoopbackHost(serviceHost))
      throw new ConfigError(
        `ROOST_SERVICE_HOST=${serviceHost} lets other machines call the loop's service endpoint: set ROOST_RESTATE_IDENTITY_KEYS to your Restate's request identity public key (publickeyv1_…, from request-identity-private-key-pem-file), so it accepts only requests Restate signed (docs/operations.md, "Scale mode")`,
      );
    restate = { mode: "external", ingressUrl, adminUrl, identityKeys };
  } else {
    restate = {
      mode: "embedded",
      ingressPort: integer(source, "restate-ingress-port", "ROOST_RESTATE_INGRESS_PORT", 7780, {
        min: 1,
        max: 65535,
      }),
      adminPort: integer(source, "restate-admin-port", "ROOST_RESTATE_ADMIN_PORT", 7781, {
        min: 1,
        max: 65535,
      }),
      nodePort: integer(source, "restate-node-port", "ROOST_RESTATE_NODE_PORT", 7782, {
        min: 1,
        max: 65535,
      }),
    };
  }

  // Two of this node's listeners on one port: say which settings clash, not EADDRINUSE later.
  const listeners: [string, number][] = [
    ["ROOST_PORT", port],
    ["ROOST_SERVICE_PORT", servicePort],
  ];
  if (restate.mode === "embedded")
    listeners.push(
      ["ROOST_RESTATE_INGRESS_PORT", restate.ingressPort],
      ["ROOST_RESTATE_ADMIN_PORT", restate.adminPort],
      ["ROOST_RESTATE_NODE_PORT", restate.nodePort],
    );
  for (const [index, [name, value]] of listeners.entries()) {
    const clash = listeners.slice(index + 1).find(([, other]) => value !== 0 && other === value);
    if (clash !== undefined)
      throw new ConfigError(
        `${name} and ${clash[0]} are both ${value}: each of Roost's listeners needs a port of its own; change one of them (docs/configuration.md lists their defaults)`,
      );
  }

  const secret = (envName: string) => pick(source, "", envName);
  const openaiKey = secret("ROOST_OPENAI_API_KEY");
  const anthropicKey = secret("ROOST_ANTHROPIC_API_KEY");
  const xaiKey = secret("ROOST_XAI_API_KEY");
  const compatibleUrl = url(source, "", "ROOST_OPENAI_COMPATIBLE_BASE_URL");
  const models: ModelProvidersConfig = {
    defaultModel: pick(source, "model", "ROOST_MODEL"),
    openai:
      openaiKey === undefined
        ? undefined
        : { apiKey: openaiKey, baseUrl: url(source, "", "ROOST_OPENAI_BASE_URL") },
    anthropic:
      anthropicKey === undefined
        ? undefined
        : { apiKey: anthropicKey, baseUrl: url(source, "", "ROOST_ANTHROPIC_BASE_URL") },
    xai:
      xaiKey === undefined
        ? undefined
        : { apiKey: xaiKey, baseUrl: url(source, "", "ROOST_XAI_BASE_URL") },
    openaiCompatible:
      compatibleUrl === undefined
        ? undefined
        : { baseUrl: compatibleUrl, apiKey: secret("ROOST_OPENAI_COMPATIBLE_API_KEY") },
  };

  return {
    dataDir,
    host,
    port,
    servicePort,
    serviceUrl,
    serviceHost,
    node: resolveNode(source),
    forwarding,
    shutdownGraceMs,
    publicUrl: resolvePublicUrl(source),
    store,
    restate,
    models,
    followUpWindowMs: integer(source, "follow-up-window-ms", "ROOST_FOLLOW_UP_WINDOW_MS", 120_000, {
      min: 0,
      max: 24 * 3600_000,
    }),
    maxBodyBytes: integer(source, "max-body-bytes", "ROOST_MAX_BODY_BYTES", 1_048_576, {
      min: 1024,
      max: 64 * 1_048_576,
    }),
    modelAttempts: integer(source, "model-attempts", "ROOST_MODEL_ATTEMPTS", 4, {
      min: 1,
      max: 20,
    }),
    approvalTimeoutMs: integer(
      source,
      "approval-timeout-ms",
      "ROOST_APPROVAL_TIMEOUT_MS",
      600_000,
      { min: 1000, max: 7 * 24 * 3600_000 },
    ),
    computers: resolveComputers(source, dataDir),
    egress: resolveEgress(source),
    webTools: resolveWebTools(source),
    vault: resolveVault(source, dataDir),
    log: resolveLog(source),
    timezone: resolveTimezone(source),
    memoryPass: boolean(source, "memory-pass", "ROOST_MEMORY_PASS", true),
    modelTitles: boolean(source, "model-titles", "ROOST_MODEL_TITLES", true),
    slackInsecureApiUrl: boolean(
      source,
      "slack-insecure-api-url",
      "ROOST_SLACK_INSECURE_API_URL",
      false,
    ),
    compaction: resolveCompaction(source),
    prices: resolvePrices(source),
    rateLimits: {
      requestsPerMinute: integer(source, "", "ROOST_RATE_LIMIT_PER_MINUTE", 3000, {
        min: 0,
        max: 10_000_000,
      }),
      requestBurst: integer(source, "", "ROOST_RATE_LIMIT_BURST", 300, { min: 1, max: 1_000_000 }),
      eventStreamsPerAccount: integer(source, "", "ROOST_MAX_EVENT_STREAMS", 20, {
        min: 1,
        max: 100_000,
      }),
    },
    previews: resolvePreviews(source),
    results: {
      botMessageMaxHops: integer(source, "", "ROOST_BOT_MESSAGE_MAX_HOPS", 4, { min: 1, max: 50 }),
      webhookAttempts: integer(source, "", "ROOST_OWNER_WEBHOOK_ATTEMPTS", 6, { min: 1, max: 20 }),
      webhookRetryMs: integer(source, "", "ROOST_OWNER_WEBHOOK_RETRY_MS", 5000, {
        min: 10,
        max: 3600_000,
      }),
    },
    helpers: {
      maxDepth: integer(source, "", "ROOST_HELPERS_MAX_DEPTH", 1, { min: 0, max: 5 }),
      maxRunning: integer(source, "", "ROOST_HELPERS_MAX_RUNNING", 4, { min: 1, max: 50 }),
    },
    routines: resolveRoutines(source),
    secrets: { key: pick(source, "", "ROOST_SECRETS_KEY") },
  };
}

function resolveRoutines(source: Source): RoutinesConfig {
  const days = pick(source, "", "ROOST_ROUTINE_ABSENCE_DAYS");
  const absenceDays = days === undefined ? 14 : Number(days);
  if (!Number.isFinite(absenceDays) || absenceDays <= 0 || absenceDays > 3650)
    throw new ConfigError(
      `ROOST_ROUTINE_ABSENCE_DAYS must be a number of days above 0 and at most 3650 (fractions allowed, e.g. 0.5), got ${JSON.stringify(days)}`,
    );
  return {
    minIntervalMs: integer(source, "", "ROOST_ROUTINE_MIN_INTERVAL_MS", 300_000, {
      min: 100,
      max: 300_000,
    }),
    misfireGraceMs: integer(source, "", "ROOST_ROUTINE_MISFIRE_GRACE_MS", 60_000, {
      min: 100,
      max: 24 * 3600_000,
    }),
    maxCatchUp: integer(source, "", "ROOST_ROUTINE_MAX_CATCH_UP", 5, { min: 1, max: 20 }),
    absenceMs: Math.round(absenceDays * 86_400_000),
    webhookMaxBodyBytes: integer(source, "", "ROOST_WEBHOOK_MAX_BODY_BYTES", 65_536, {
      min: 1024,
      max: 1_048_576,
    }),
    webhookPerMinute: integer(source, "", "ROOST_WEBHOOK_PER_MINUTE", 60, {
      min: 1,
      max: 100_000,
    }),
  };
}

function resolvePreviews(source: Source): PreviewsConfig {
  const previewUrl = url(source, "preview-url", "ROOST_PREVIEW_URL");
  if (previewUrl !== undefined) {
    const parsed = new URL(previewUrl);
    if (parsed.pathname !== "/" || parsed.search !== "" || !parsed.hostname.includes(".")) {
      throw new ConfigError(
        `ROOST_PREVIEW_URL (--preview-url) is the scheme and domain under which previews get hosts of their own, such as https://preview.example.com (with *.preview.example.com pointing at this server), got ${JSON.stringify(previewUrl)}`,
      );
    }
  }
  return {
    url: previewUrl,
    linkTtlMs: integer(source, "", "ROOST_PREVIEW_LINK_TTL_MS", 300_000, {
      min: 10_000,
      max: 24 * 3600_000,
    }),
    sessionTtlMs: integer(source, "", "ROOST_PREVIEW_SESSION_TTL_MS", 3_600_000, {
      min: 60_000,
      max: 30 * 24 * 3600_000,
    }),
    maxConnectionsPerComputer: integer(source, "", "ROOST_PREVIEW_MAX_CONNECTIONS", 32, {
      min: 1,
      max: 10_000,
    }),
    idleTimeoutMs: integer(source, "", "ROOST_PREVIEW_IDLE_TIMEOUT_MS", 300_000, {
      min: 1000,
      max: 24 * 3600_000,
    }),
  };
}

function share(source: Source, envName: string, fallback: number): number {
  const raw = pick(source, "", envName);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d*\.?\d+$/.test(raw) || value <= 0 || value >= 1)
    throw new ConfigError(
      `${envName} must be a share between 0 and 1 (e.g. 0.6), got ${JSON.stringify(raw)}`,
    );
  return value;
}

function resolveCompaction(source: Source): CompactionConfig {
  const budget = pick(source, "", "ROOST_COMPACTION_BUDGET_TOKENS");
  const compaction: CompactionConfig = {
    share: share(source, "ROOST_COMPACTION_SHARE", 0.6),
    idleShare: share(source, "ROOST_COMPACTION_IDLE_SHARE", 0.3),
    keepMessages: integer(source, "", "ROOST_COMPACTION_KEEP_MESSAGES", 20, { min: 2, max: 1000 }),
  };
  if (budget !== undefined)
    compaction.budgetTokens = integer(source, "", "ROOST_COMPACTION_BUDGET_TOKENS", 0, {
      min: 500,
      max: 10_000_000,
    });
  if (compaction.idleShare > compaction.share)
    throw new ConfigError(
      "ROOST_COMPACTION_IDLE_SHARE must not be larger than ROOST_COMPACTION_SHARE (idle compaction starts earlier, not later)",
    );
  return compaction;
}

function resolveTimezone(source: Source): string {
  const timezone = pick(source, "timezone", "ROOST_TIMEZONE") ?? "UTC";
  try {
    new Intl.DateTimeFormat("en", { timeZone: timezone });
  } catch {
    throw new ConfigError(
      `ROOST_TIMEZONE (--timezone) must be an IANA timezone name such as Europe/Berlin or UTC, got ${JSON.stringify(timezone)}`,
    );
  }
  return timezone;
}

function resolveEgress(source: Source): EgressConfig {
  const raw = pick(source, "egress-allow-private", "ROOST_EGRESS_ALLOW_PRIVATE") ?? "";
  const allowPrivate = raw
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "");
  // Which ranges are private is the egress module's to judge (at start, with a fix-it message).
  for (const part of allowPrivate) {
    if (!/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(part)) {
      throw new ConfigError(
        `ROOST_EGRESS_ALLOW_PRIVATE (--egress-allow-private) is a comma-separated list of CIDR ranges such as 10.20.0.0/16,fd00:1::/64; ${JSON.stringify(part)} is not one`,
      );
    }
  }
  return { allowPrivate };
}

const searchBases = { brave: "https://api.search.brave.com", tavily: "https://api.tavily.com" };

function resolveWebTools(source: Source): WebToolsConfig {
  const provider = pick(source, "web-search-provider", "ROOST_WEB_SEARCH_PROVIDER");
  const baseUrl = url(source, "web-search-url", "ROOST_WEB_SEARCH_URL");
  const apiKey = pick(source, "", "ROOST_WEB_SEARCH_API_KEY");
  let search: WebToolsConfig["search"];
  if (provider === undefined) {
    if (baseUrl !== undefined || apiKey !== undefined)
      throw new ConfigError(
        "ROOST_WEB_SEARCH_URL or ROOST_WEB_SEARCH_API_KEY is set but ROOST_WEB_SEARCH_PROVIDER is not: set it to searxng, brave or tavily",
      );
  } else if (provider === "searxng") {
    if (baseUrl === undefined)
      throw new ConfigError(
        "ROOST_WEB_SEARCH_PROVIDER=searxng needs the instance's URL: set ROOST_WEB_SEARCH_URL (e.g. http://127.0.0.1:8888, with the json format enabled in its settings.yml)",
      );
    search = { provider, baseUrl, apiKey };
  } else if (provider === "brave" || provider === "tavily") {
    if (apiKey === undefined)
      throw new ConfigError(
        `ROOST_WEB_SEARCH_PROVIDER=${provider} needs an API key: set ROOST_WEB_SEARCH_API_KEY (${provider === "brave" ? "Brave Search's subscription token" : "a Tavily key, tvly-…"})`,
      );
    search = { provider, baseUrl: baseUrl ?? searchBases[provider], apiKey };
  } else {
    throw new ConfigError(
      `ROOST_WEB_SEARCH_PROVIDER (--web-search-provider) must be searxng, brave or tavily, got ${JSON.stringify(provider)}`,
    );
  }
  return {
    search,
    fetchMaxBytes: integer(source, "", "ROOST_WEB_FETCH_MAX_BYTES", 5_000_000, {
      min: 1024,
      max: 100_000_000,
    }),
    fetchTimeoutMs: integer(source, "", "ROOST_WEB_FETCH_TIMEOUT_MS", 20_000, {
      min: 100,
      max: 600_000,
    }),
  };
}

function resolveVault(source: Source, dataDir: string): VaultConfig {
  const dir = pick(source, "vault-dir", "ROOST_VAULT_DIR") ?? `${dataDir}/vault`;
  const file = pick(source, "vault-upstream-ca-file", "ROOST_VAULT_UPSTREAM_CA_FILE");
  if (file === undefined) return { dir, upstreamCa: [] };
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new ConfigError(
      `ROOST_VAULT_UPSTREAM_CA_FILE: cannot read ${JSON.stringify(file)} (${(error as Error).message}); give the path of a PEM file of CA certificates`,
    );
  }
  const upstreamCa =
    text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (upstreamCa.length === 0) {
    throw new ConfigError(
      `ROOST_VAULT_UPSTREAM_CA_FILE: ${JSON.stringify(file)} holds no PEM certificate (-----BEGIN CERTIFICATE----- …); give a file of CA certificates`,
    );
  }
  for (const [index, pem] of upstreamCa.entries()) {
    try {
      new X509Certificate(pem);
    } catch (error) {
      throw new ConfigError(
        `ROOST_VAULT_UPSTREAM_CA_FILE: certificate ${index + 1} in ${JSON.stringify(file)} cannot be parsed (${(error as Error).message})`,
      );
    }
  }
  return { dir, upstreamCa: upstreamCa.map((pem) => `${pem}\n`) };
}

function resolveLog(source: Source): LogConfig {
  const level = pick(source, "log-level", "ROOST_LOG_LEVEL") ?? "info";
  if (!["debug", "info", "warn", "error", "silent"].includes(level)) {
    throw new ConfigError(
      `ROOST_LOG_LEVEL (--log-level) must be debug, info, warn, error or silent, got ${JSON.stringify(level)}`,
    );
  }
  const format = pick(source, "log-format", "ROOST_LOG_FORMAT") ?? "auto";
  if (!["auto", "json", "pretty"].includes(format)) {
    throw new ConfigError(
      `ROOST_LOG_FORMAT (--log-format) must be auto, json or pretty, got ${JSON.stringify(format)}`,
    );
  }
  return { level: level as LogConfig["level"], format: format as LogConfig["format"] };
}

const pricesHelp =
  'ROOST_PRICES must be JSON (or the path of a JSON file) like {"currency":"USD","models":{"openai:gpt-4.1-mini":{"input":0.4,"output":1.6,"cachedInput":0.1}}}: prices per million tokens by model spec, null to remove a default';

/** ROOST_PRICES: JSON text, or the path of a file holding it (docs/usage.md#prices). */
function resolvePrices(source: Source): PricesConfig {
  const value = pick(source, "", "ROOST_PRICES");
  if (value === undefined) return { currency: "USD", models: {} };
  let text = value;
  if (!value.trimStart().startsWith("{")) {
    try {
      text = readFileSync(value, "utf8");
    } catch (error) {
      throw new ConfigError(
        `ROOST_PRICES: cannot read the price file ${JSON.stringify(value)} (${(error as Error).message}); ${pricesHelp}`,
      );
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(
      `ROOST_PRICES is not valid JSON (${(error as Error).message}); ${pricesHelp}`,
    );
  }
  return parsePrices(parsed);
}

function parsePrices(parsed: unknown): PricesConfig {
  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === "object" && value !== null && !Array.isArray(value);
  if (!isObject(parsed)) throw new ConfigError(pricesHelp);
  const unknownKeys = Object.keys(parsed).filter((key) => key !== "currency" && key !== "models");
  if (unknownKeys.length > 0)
    throw new ConfigError(
      `ROOST_PRICES: unknown key ${JSON.stringify(unknownKeys[0])}; ${pricesHelp}`,
    );
  const currency = parsed.currency ?? "USD";
  if (typeof currency !== "string" || !/^[A-Z]{3}$/.test(currency))
    throw new ConfigError(
      `ROOST_PRICES: currency must be a three-letter code such as USD, got ${JSON.stringify(currency)}`,
    );
  const models = parsed.models ?? {};
  if (!isObject(models))
    throw new ConfigError(`ROOST_PRICES: models must be an object; ${pricesHelp}`);
  const result: Record<string, ModelPrice | null> = {};
  for (const [spec, price] of Object.entries(models)) {
    if (price === null) {
      result[spec] = null;
      continue;
    }
    const where = `ROOST_PRICES: the price of ${JSON.stringify(spec)}`;
    if (!isObject(price))
      throw new ConfigError(`${where} must be {input, output, cachedInput?} or null`);
    const extra = Object.keys(price).filter(
      (key) => key !== "input" && key !== "output" && key !== "cachedInput",
    );
    if (extra.length > 0)
      throw new ConfigError(
        `${where} has an unknown field ${JSON.stringify(extra[0])} (fields: input, output, cachedInput, per million tokens)`,
      );
    const amount = (field: string, required: boolean): number | undefined => {
      const value = price[field];
      if (value === undefined && !required) return undefined;
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > 1_000_000)
        throw new ConfigError(
          `${where}: ${field} must be a number of ${currency} per million tokens, 0 or more, got ${JSON.stringify(value)}`,
        );
      return value;
    };
    const cachedInput = amount("cachedInput", false);
    result[spec] = {
      input: amount("input", true)!,
      output: amount("output", true)!,
      ...(cachedInput === undefined ? {} : { cachedInput }),
    };
  }
  return { currency, models: result };
}
