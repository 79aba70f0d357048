/**
 * `roost service-balancer`: the one URL every node registers with Restate in scale mode, for an
 * install without a load balancer of its own (docs/operations.md, "Any node runs any loop"). It
 * forwards each invocation stream to a healthy node's service endpoint (src/platform/service-balancer.ts).
 */
import type { Command, ParsedArgs } from "./args.ts";
import { stringOption } from "./args.ts";
import { CliError, onInterrupt, type CliIo } from "./io.ts";

/** What `roost service-balancer` runs with: flag > environment > default. */
export interface ServiceBalancerConfig {
  host: string;
  port: number;
  nodes: string[];
  probeIntervalMs: number;
}

export function resolveServiceBalancer(
  args: ParsedArgs,
  env: Readonly<Record<string, string | undefined>>,
): ServiceBalancerConfig {
  const value = (flag: string, variable: string) => {
    const given = stringOption(args, flag) ?? env[variable];
    return given === undefined || given.trim() === "" ? undefined : given.trim();
  };
  const nodes = (value("nodes", "ROOST_BALANCER_NODES") ?? "")
    .split(",")
    .map((node) => node.trim())
    .filter((node) => node !== "");
  if (nodes.length === 0)
    throw new CliError(
      "roost service-balancer: say which nodes with --nodes http://HOST:PORT,http://HOST:PORT (each node's service endpoint, ROOST_SERVICE_HOST:ROOST_SERVICE_PORT), or set ROOST_BALANCER_NODES",
      2,
    );
  const port = integer(value("port", "ROOST_BALANCER_PORT") ?? "7791", "--port", 1, 65_535);
  const probeIntervalMs = integer(
    value("probe-interval-ms", "ROOST_BALANCER_PROBE_INTERVAL_MS") ?? "1000",
    "--probe-interval-ms",
    50,
    60_000,
  );
  return {
    host: value("host", "ROOST_BALANCER_HOST") ?? "127.0.0.1",
    port,
    nodes,
    probeIntervalMs,
  };
}

function integer(text: string, name: string, min: number, max: number): number {
  const parsed = Number(text);
  if (!Number.isInteger(parsed) || parsed < min || parsed > max)
    throw new CliError(
      `roost service-balancer: ${name} must be a whole number from ${min} to ${max} (got ${JSON.stringify(text)})`,
      2,
    );
  return parsed;
}

export const serviceBalancerCommand: Command = {
  spec: {
    name: "service-balancer",
    summary: "Balance Restate's invocations over the nodes' service endpoints (scale mode).",
    synopsis: "--nodes URL,URL [options]",
    description: [
      "Every node then registers this balancer's URL (ROOST_SERVICE_URL) with Restate, so any",
      "node runs any loop and a killed node's invocations are retried on the others. Each",
      "HTTP/2 stream goes, unchanged, to a node whose /health answers 200. Run it where",
      "Restate reaches it; the nodes' request identity check still applies behind it.",
    ].join("\n"),
    options: {
      nodes: {
        type: "string",
        value: "URL,URL",
        description: "the nodes' service endpoints (h2c), comma-separated",
        env: "ROOST_BALANCER_NODES",
      },
      host: {
        type: "string",
        value: "HOST",
        description: "address to listen on",
        env: "ROOST_BALANCER_HOST",
        default: "127.0.0.1",
      },
      port: {
        type: "string",
        value: "PORT",
        description: "port to listen on",
        env: "ROOST_BALANCER_PORT",
        default: "7791",
      },
      "probe-interval-ms": {
        type: "string",
        value: "MS",
        description: "how often each node's /health is probed",
        env: "ROOST_BALANCER_PROBE_INTERVAL_MS",
        default: "1000",
      },
    },
    positionals: { min: 0, max: 0, names: "" },
    examples: [
      "roost service-balancer --nodes http://10.0.0.5:7790,http://10.0.0.6:7790 --host 10.0.0.4",
    ],
  },
  run: async (args, io) => runServiceBalancer(resolveServiceBalancer(args, io.env), io),
};

async function runServiceBalancer(config: ServiceBalancerConfig, io: CliIo): Promise<number> {
  const [{ startServiceBalancer, parseBalancerNodes }, { createLogger }] = await Promise.all([
    import("../platform/index.ts"),
    import("../log/index.ts"),
  ]);
  try {
    parseBalancerNodes(config.nodes);
  } catch (error) {
    throw new CliError(`roost ${(error as Error).message}`, 2);
  }
  const logger = createLogger({ format: "json", destination: io.stderr });
  const balancer = await startServiceBalancer({ ...config, logger }).catch((error: unknown) => {
    throw new CliError(
      `roost service-balancer: cannot listen on ${config.host}:${config.port} (${(error as Error).message}); pick another --port or --host`,
    );
  });
  await new Promise<void>((resolve) => {
    const stop = () => {
      stopInterrupt();
      process.off("SIGTERM", stop);
      resolve();
    };
    const stopInterrupt = onInterrupt(io, stop);
    process.on("SIGTERM", stop);
    // Only once the handlers are in place: a supervisor that reads this line may stop it at once.
    io.stdout.write(
      `roost service-balancer: ${balancer.url} -> ${config.nodes.join(", ")} (set ROOST_SERVICE_URL=${balancer.url} on every node). Ctrl+C stops it.\n`,
    );
  });
  await balancer.close();
  return 0;
}
