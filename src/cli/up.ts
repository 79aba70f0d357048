/** `roost up`: the whole platform in one process, on embedded defaults unless configured otherwise. */
import { join } from "node:path";
import type { Flags } from "../config/index.ts";
import type { Command, OptionSpec } from "./args.ts";
import type { CliIo } from "./io.ts";

/** Each option is a config flag of resolveConfig (docs/configuration.md); the flag beats the env. */
export const options: Record<string, OptionSpec> = {
  "memory-pass": {
    type: "string",
    value: "BOOL",
    description: "run the memory pass after every turn (on or off)",
    env: "ROOST_MEMORY_PASS",
    default: "on",
  },
  "model-titles": {
    type: "string",
    value: "BOOL",
    description: "ask the bot's model for a title after a conversation's first reply (on or off)",
    env: "ROOST_MODEL_TITLES",
    default: "on",
  },
  "slack-insecure-api-url": {
    type: "string",
    value: "BOOL",
    description: "let a Slack link's apiUrl be plain http (tests, a local gateway; on or off)",
    env: "ROOST_SLACK_INSECURE_API_URL",
    default: "off",
  },
  timezone: {
    type: "string",
    value: "ZONE",
    description: "the users' timezone (IANA name), for the date in prompts",
    env: "ROOST_TIMEZONE",
    default: "UTC",
  },
  "log-level": {
    type: "string",
    value: "LEVEL",
    description: "debug, info, warn, error or silent",
    env: "ROOST_LOG_LEVEL",
    default: "info",
  },
  "log-format": {
    type: "string",
    value: "FORMAT",
    description: "json, pretty, or auto (pretty on a terminal)",
    env: "ROOST_LOG_FORMAT",
    default: "auto",
  },
  "data-dir": {
    type: "string",
    value: "DIR",
    description: "where embedded mode keeps everything",
    env: "ROOST_DATA_DIR",
    default: ".roost",
  },
  host: {
    type: "string",
    value: "HOST",
    description: "address the API listens on",
    env: "ROOST_HOST",
    default: "127.0.0.1",
  },
  port: {
    type: "string",
    value: "PORT",
    description: "port of the API and events stream (0 picks a free one)",
    env: "ROOST_PORT",
    default: "7700",
  },
  "service-port": {
    type: "string",
    value: "PORT",
    description: "port of the loop service Restate calls",
    env: "ROOST_SERVICE_PORT",
    default: "7790",
  },
  "service-url": {
    type: "string",
    value: "URL",
    description: "URL Restate uses to reach the loop service",
    env: "ROOST_SERVICE_URL",
  },
  "service-host": {
    type: "string",
    value: "HOST",
    description:
      "address the loop service listens on (beyond loopback: needs the engine's request identity)",
    env: "ROOST_SERVICE_HOST",
    default: "127.0.0.1",
  },
  "node-id": {
    type: "string",
    value: "ID",
    description: "this node's id as a computer host (kept in the data dir when unset)",
    env: "ROOST_NODE_ID",
  },
  "node-service-url": {
    type: "string",
    value: "URL",
    description: "URL Restate uses to reach this node's own service port (never a load balancer)",
    env: "ROOST_NODE_SERVICE_URL",
  },
  store: {
    type: "string",
    value: "KIND",
    description: "sqlite or postgres",
    env: "ROOST_STORE",
    default: "sqlite",
  },
  "sqlite-path": {
    type: "string",
    value: "FILE",
    description: "SQLite database file",
    env: "ROOST_SQLITE_PATH",
    default: "$ROOST_DATA_DIR/roost.db",
  },
  "database-url": {
    type: "string",
    value: "URL",
    description: "Postgres connection string (with --store postgres)",
    env: "ROOST_DATABASE_URL",
  },
  "restate-ingress-url": {
    type: "string",
    value: "URL",
    description: "ingress of an external Restate (with --restate-admin-url)",
    env: "ROOST_RESTATE_INGRESS_URL",
  },
  "restate-admin-url": {
    type: "string",
    value: "URL",
    description: "admin API of an external Restate",
    env: "ROOST_RESTATE_ADMIN_URL",
  },
  "restate-ingress-port": {
    type: "string",
    value: "PORT",
    description: "embedded Restate ingress port",
    env: "ROOST_RESTATE_INGRESS_PORT",
    default: "7780",
  },
  "restate-admin-port": {
    type: "string",
    value: "PORT",
    description: "embedded Restate admin port",
    env: "ROOST_RESTATE_ADMIN_PORT",
    default: "7781",
  },
  "restate-node-port": {
    type: "string",
    value: "PORT",
    description: "embedded Restate node port",
    env: "ROOST_RESTATE_NODE_PORT",
    default: "7782",
  },
  model: {
    type: "string",
    value: "SPEC",
    description: "model of bots that name none: provider:model or demo",
    env: "ROOST_MODEL",
  },
  "computer-provider": {
    type: "string",
    value: "KIND",
    description: "how computers run: auto, local (isolated) or process (no isolation)",
    env: "ROOST_COMPUTER_PROVIDER",
    default: "auto",
  },
  "install-system-packages": {
    type: "string",
    value: "0|1",
    description:
      "as root with apt-get, install the packages isolated computers need (bubblewrap, socat, …) when missing",
    env: "ROOST_INSTALL_SYSTEM_PACKAGES",
    default: "1",
  },
  "tools-path": {
    type: "string",
    value: "DIRS",
    description:
      "folders to find bwrap, socat, the disk tools and apt-get in, instead of the usual ones",
    env: "ROOST_TOOLS_PATH",
    default: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  },
  "computers-dir": {
    type: "string",
    value: "DIR",
    description: "where computers keep their disks",
    env: "ROOST_COMPUTERS_DIR",
    default: "$ROOST_DATA_DIR/computers",
  },
  "computer-disk-bytes": {
    type: "string",
    value: "BYTES",
    description: "each local computer's disk limit (applies at its next wake)",
    env: "ROOST_COMPUTER_DISK_BYTES",
    default: "10737418240",
  },
  "computer-spares": {
    type: "string",
    value: "N",
    description:
      "spare sandboxes kept ready with the worker started, so a wake skips Node's start (as root; 0 turns them off)",
    env: "ROOST_COMPUTER_SPARES",
    default: "1",
  },
  "screens-max": {
    type: "string",
    value: "N",
    description: "screens (one per bot, each with a browser) a computer runs at most",
    env: "ROOST_SCREENS_MAX",
    default: "4",
  },
  "idle-sleep-ms": {
    type: "string",
    value: "MS",
    description: "an idle computer sleeps after this long",
    env: "ROOST_IDLE_SLEEP_MS",
    default: "300000",
  },
  "wake-timeout-ms": {
    type: "string",
    value: "MS",
    description: "how long waking a computer may take",
    env: "ROOST_WAKE_TIMEOUT_MS",
    default: "60000",
  },
  "worker-token-ttl-ms": {
    type: "string",
    value: "MS",
    description: "lifetime of a computer worker's token",
    env: "ROOST_WORKER_TOKEN_TTL_MS",
    default: "86400000",
  },
  "gateway-url": {
    type: "string",
    value: "URL",
    description: "ws(s):// URL workers use to reach the gateway",
    env: "ROOST_GATEWAY_URL",
    default: "ws://$ROOST_HOST:$ROOST_PORT/v1/gateway",
  },
  "egress-allow-private": {
    type: "string",
    value: "CIDRS",
    description: "private ranges computers may reach when their policy has an IP rule for them",
    env: "ROOST_EGRESS_ALLOW_PRIVATE",
    default: "none",
  },
  "web-search-provider": {
    type: "string",
    value: "NAME",
    description:
      "the web_search tool's provider: searxng, brave or tavily (key: ROOST_WEB_SEARCH_API_KEY)",
    env: "ROOST_WEB_SEARCH_PROVIDER",
    default: "none (no web_search)",
  },
  "web-search-url": {
    type: "string",
    value: "URL",
    description: "SearXNG's URL, or another base URL for the Brave or Tavily API",
    env: "ROOST_WEB_SEARCH_URL",
    default: "the provider's API",
  },
  "vault-dir": {
    type: "string",
    value: "DIR",
    description: "where each computer's vault CA is kept (its key mode 0600)",
    env: "ROOST_VAULT_DIR",
    default: "$ROOST_DATA_DIR/vault",
  },
  "vault-upstream-ca-file": {
    type: "string",
    value: "FILE",
    description: "PEM CA certificates trusted for brokered hosts besides the public roots",
    env: "ROOST_VAULT_UPSTREAM_CA_FILE",
    default: "none",
  },
  "preview-url": {
    type: "string",
    value: "URL",
    description: "scheme and domain of port previews' own hosts (https://preview.example.com)",
    env: "ROOST_PREVIEW_URL",
    default: "*.localhost links",
  },
  "blob-store": {
    type: "string",
    value: "KIND",
    description: "where computer snapshots go: local or s3",
    env: "ROOST_BLOB_STORE",
    default: "local",
  },
  "blob-dir": {
    type: "string",
    value: "DIR",
    description: "folder of the local blob store",
    env: "ROOST_BLOB_DIR",
    default: "$ROOST_DATA_DIR/blobs",
  },
  "s3-endpoint": {
    type: "string",
    value: "URL",
    description: "S3-compatible endpoint",
    env: "ROOST_S3_ENDPOINT",
    default: "AWS",
  },
  "s3-bucket": {
    type: "string",
    value: "NAME",
    description: "S3 bucket (must exist)",
    env: "ROOST_S3_BUCKET",
    default: "none",
  },
  "s3-region": {
    type: "string",
    value: "REGION",
    description: "S3 region",
    env: "ROOST_S3_REGION",
    default: "us-east-1",
  },
  "s3-prefix": {
    type: "string",
    value: "PREFIX",
    description: "prefix of every S3 key",
    env: "ROOST_S3_PREFIX",
    default: "empty",
  },
  "s3-force-path-style": {
    type: "string",
    value: "BOOL",
    description: "path-style S3 URLs",
    env: "ROOST_S3_FORCE_PATH_STYLE",
    default: "true with an endpoint",
  },
  "snapshot-keep": {
    type: "string",
    value: "N",
    description: "snapshot generations kept restorable",
    env: "ROOST_SNAPSHOT_KEEP",
    default: "5",
  },
  "snapshot-compression-level": {
    type: "string",
    value: "N",
    description: "zstd level of snapshots",
    env: "ROOST_SNAPSHOT_COMPRESSION_LEVEL",
    default: "1",
  },
  "follow-up-window-ms": {
    type: "string",
    value: "MS",
    description: "how long a loop waits for follow-ups after a reply",
    env: "ROOST_FOLLOW_UP_WINDOW_MS",
    default: "120000",
  },
  "max-body-bytes": {
    type: "string",
    value: "BYTES",
    description: "largest accepted request body",
    env: "ROOST_MAX_BODY_BYTES",
    default: "1048576",
  },
  "model-attempts": {
    type: "string",
    value: "N",
    description: "attempts of a failing model call",
    env: "ROOST_MODEL_ATTEMPTS",
    default: "4",
  },
};

export const upCommand: Command = {
  spec: {
    name: "up",
    summary:
      "Start Roost: the API, the durable engine (embedded Restate) and the store, in one process.",
    synopsis: "[options]",
    description:
      "The first start creates a local admin account and writes its token to $ROOST_DATA_DIR/admin-token.\nAs root with apt-get, it first installs what isolated computers need and the host lacks (one line says so;\nROOST_INSTALL_SYSTEM_PACKAGES=0 turns it off). Ctrl+C stops everything. `npm start` runs this command.",
    options,
    positionals: { min: 0, max: 0, names: "" },
    environment: [
      ["ROOST_OPENAI_API_KEY", "OpenAI key (also ROOST_OPENAI_BASE_URL)"],
      ["ROOST_ANTHROPIC_API_KEY", "Anthropic key (also ROOST_ANTHROPIC_BASE_URL)"],
      ["ROOST_XAI_API_KEY", "xAI key (also ROOST_XAI_BASE_URL)"],
      [
        "ROOST_OPENAI_COMPATIBLE_BASE_URL",
        "an OpenAI-compatible server (Ollama, vLLM…; also ROOST_OPENAI_COMPATIBLE_API_KEY)",
      ],
    ],
    examples: [
      "roost up",
      "roost up --port 8080 --data-dir /var/lib/roost",
      "ROOST_MODEL=openai:gpt-4.1-mini ROOST_OPENAI_API_KEY=… roost up",
    ],
  },
  run: (args, io) => up(args.values, io),
};

/** `role`: `computer-host` for `roost computer-host` (computer-host.ts, decision 0041). */
export async function up(
  flags: Flags,
  io: CliIo,
  role: "api" | "computer-host" = "api",
): Promise<number> {
  // Loaded here, not at the top: the other commands are HTTP clients and start faster without it.
  const [{ resolveConfig }, { startPlatform }, { createLogger }, computers] = await Promise.all([
    import("../config/index.ts"),
    import("../platform/index.ts"),
    import("../log/index.ts"),
    import("../computers/index.ts"),
  ]);
  const config = resolveConfig(flags, io.env);
  const started = Date.now();
  const logger = createLogger({
    level: config.log.level,
    format:
      config.log.format === "auto"
        ? io.stderr.isTTY === true
          ? "pretty"
          : "json"
        : config.log.format,
    destination: io.stderr,
  });
  // A fresh machine: install what isolated computers need before anything starts (host-setup.ts).
  const { report } = await computers.prepareHost({
    provider: config.computers.provider,
    installSystemPackages: config.computers.installSystemPackages,
    searchPath: config.computers.toolsPath,
    logFile: join(config.dataDir, "system-packages.log"),
    notice: (line) => io.stderr.write(`${line}\n`),
    logger,
  });
  const platform = await startPlatform(config, { logger, host: report, role });
  const out = (line: string) => io.stdout.write(`${line}\n`);
  const isolation = computers.isolationOf(platform.provider);
  out(
    role === "computer-host"
      ? `Roost computer host ${config.node.id ?? ""} is up: gateway ${platform.url}/v1/gateway, node endpoint ${config.forwarding?.url ?? ""} (${Date.now() - started} ms)`
      : `Roost is up at ${platform.url} (${Date.now() - started} ms)`,
  );
  out(`  data:        ${config.dataDir}`);
  out(`  store:       ${config.store.kind}`);
  out(
    `  engine:      ${config.restate.mode === "embedded" ? `embedded Restate (ingress ${platform.engine.ingressUrl})` : `external Restate at ${platform.engine.ingressUrl}`}`,
  );
  out(
    `  computers:   ${config.node.computers === "remote" ? `on the computer hosts ${config.node.computerHosts.join(", ")}, ` : ""}${platform.provider.kind}${
      isolation === "full"
        ? " (isolated sandboxes)"
        : isolation === "unprivileged"
          ? ` (isolated sandboxes, unprivileged: ${computers.unprivilegedLimits})`
          : " (NOT isolated: development only)"
    }`,
  );
  if (role === "computer-host") {
    out("It serves no public API: send requests to the API nodes (Ctrl+C stops it)");
  } else {
    out(`  admin token: ${platform.adminTokenFile}`);
    out(`Open ${platform.url} in a browser, or try: npx roost chat "hello"   (Ctrl+C stops Roost)`);
  }

  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        // A second Ctrl+C means "now": leave without waiting for a clean close.
        io.stderr.write(`roost: ${signal} again, exiting without a clean shutdown\n`);
        process.exit(130);
      }
      stopping = true;
      io.stderr.write(`\nroost: ${signal}, shutting down… (press Ctrl+C again to force)\n`);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  await platform.close();
  return 0;
}
