/**
 * A 3-node Restate cluster on 127.0.0.1 ports, from the same npm binary as the embedded engine
 * (docs/operations.md, "A Restate cluster"): replicated metadata on every node, the replicated
 * log with replication 2, every node running every role. Node 1 provisions the cluster; the
 * others join through the metadata servers. Any one node may be killed: the other two keep a
 * quorum of the metadata and a copy of every log record.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, openSync, readFileSync, writeFileSync, closeSync } from "node:fs";
import { join } from "node:path";
import { findFreePort, resolveRestateBinary } from "../../src/engine/index.ts";
import { waitFor } from "./wait.ts";

export interface RestateClusterNode {
  readonly name: string;
  readonly ingressUrl: string;
  readonly adminUrl: string;
  readonly nodeUrl: string;
  running(): boolean;
  /** SIGKILL, as a crashed machine. */
  kill(): Promise<void>;
  /** Starts the node again on its data; resolves once it answers health. */
  start(): Promise<void>;
  log(): string;
}

export interface RestateCluster {
  readonly nodes: readonly RestateClusterNode[];
  close(): Promise<void>;
}

/** The TOML of one cluster node (every key is restate-server 1.7's). */
export function renderClusterNodeConfig(options: {
  name: string;
  baseDir: string;
  nodePort: number;
  adminPort: number;
  ingressPort: number;
  metadataAddresses: readonly string[];
  provision: boolean;
  partitions: number;
}): string {
  return [
    `node-name = ${JSON.stringify(options.name)}`,
    `cluster-name = "roost-test"`,
    `base-dir = ${JSON.stringify(options.baseDir)}`,
    `listen-mode = "tcp"`,
    `bind-ip = "127.0.0.1"`,
    `bind-address = "127.0.0.1:${options.nodePort}"`,
    `advertised-address = "http://127.0.0.1:${options.nodePort}/"`,
    // At most one node provisions; the others wait to be part of the provisioned cluster.
    `auto-provision = ${options.provision}`,
    `default-replication = 2`,
    `default-num-partitions = ${options.partitions}`,
    `disable-telemetry = true`,
    `log-disable-ansi-codes = true`,
    `roles = ["metadata-server", "admin", "worker", "log-server", "http-ingress"]`,
    `rocksdb-total-memory-size = "256 MiB"`,
    "",
    "[default-retry-policy]",
    `initial-interval = "100ms"`,
    `max-interval = "2s"`,
    `max-attempts = 4294967295`,
    `on-max-attempts = "pause"`,
    "",
    "[metadata-server]",
    `type = "replicated"`,
    "",
    "[metadata-client]",
    `addresses = ${JSON.stringify(options.metadataAddresses)}`,
    "",
    "[bifrost]",
    `default-provider = "replicated"`,
    "",
    "[admin]",
    `bind-address = "127.0.0.1:${options.adminPort}"`,
    "",
    "[ingress]",
    `bind-address = "127.0.0.1:${options.ingressPort}"`,
    "",
  ].join("\n");
}

export async function startRestateCluster(options: {
  dir: string;
  /** @default 3 */
  size?: number;
  /** @default 4 */
  partitions?: number;
}): Promise<RestateCluster> {
  const size = options.size ?? 3;
  const binary = resolveRestateBinary();
  const taken: number[] = [];
  const port = async () => {
    const free = await findFreePort(taken);
    taken.push(free);
    return free;
  };
  const layout: { name: string; nodePort: number; adminPort: number; ingressPort: number }[] = [];
  for (let index = 1; index <= size; index++) {
    layout.push({
      name: `n${index}`,
      nodePort: await port(),
      adminPort: await port(),
      ingressPort: await port(),
    });
  }
  const metadataAddresses = layout.map((node) => `http://127.0.0.1:${node.nodePort}/`);
  const nodes = layout.map((spec, index): RestateClusterNode & { spawn(): void } => {
    const baseDir = join(options.dir, spec.name);
    mkdirSync(baseDir, { recursive: true });
    const configFile = join(baseDir, "restate.toml");
    const logFile = join(baseDir, "restate-server.log");
    writeFileSync(
      configFile,
      renderClusterNodeConfig({
        ...spec,
        baseDir,
        metadataAddresses,
        provision: index === 0,
        partitions: options.partitions ?? 4,
      }),
    );
    let child: ChildProcess | undefined;
    const ingressUrl = `http://127.0.0.1:${spec.ingressPort}`;
    const adminUrl = `http://127.0.0.1:${spec.adminPort}`;
    const healthy = async () => {
      const [admin, ingress] = await Promise.all([
        fetch(`${adminUrl}/health`).catch(() => undefined),
        fetch(`${ingressUrl}/restate/health`).catch(() => undefined),
      ]);
      return admin?.status === 200 && ingress?.status === 200;
    };
    const node = {
      name: spec.name,
      ingressUrl,
      adminUrl,
      nodeUrl: metadataAddresses[index]!,
      running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
      log: () => readFileSync(logFile, "utf8"),
      spawn() {
        const out = openSync(logFile, "a");
        // No RESTATE_* variables from the test's environment: the file is the whole config.
        const env = Object.fromEntries(
          Object.entries(process.env).filter(([key]) => !key.startsWith("RESTATE_")),
        );
        child = spawn(binary, ["--config-file", configFile, "--no-logo"], {
          env,
          stdio: ["ignore", out, out],
        });
        closeSync(out);
      },
      async start() {
        node.spawn();
        await waitFor(healthy, {
          timeoutMs: 60_000,
          what: `restate ${spec.name} to become healthy`,
        });
      },
      async kill() {
        const target = child;
        if (target === undefined || target.exitCode !== null || target.signalCode !== null) return;
        const exited = new Promise((resolve) => target.once("exit", resolve));
        target.kill("SIGKILL");
        await exited;
      },
    };
    return node;
  });
  // All at once: node 1 provisions only once the others' metadata servers can form a quorum.
  for (const node of nodes) node.spawn();
  const cluster: RestateCluster = {
    nodes,
    async close() {
      await Promise.all(nodes.map((node) => node.kill()));
    },
  };
  try {
    await waitFor(
      async () => {
        for (const node of nodes) {
          const [admin, ingress] = await Promise.all([
            fetch(`${node.adminUrl}/health`).catch(() => undefined),
            fetch(`${node.ingressUrl}/restate/health`).catch(() => undefined),
          ]);
          if (admin?.status !== 200 || ingress?.status !== 200) return false;
        }
        return true;
      },
      { timeoutMs: 90_000, what: "the Restate cluster's nodes to become healthy" },
    );
  } catch (error) {
    await cluster.close();
    throw error;
  }
  return cluster;
}
