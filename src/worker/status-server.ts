/**
 * The worker's local status endpoints, for a self-hosted machine's own monitoring (systemd,
 * Prometheus, a load balancer's health check): `/healthz`, `/readyz` and `/metrics` (Prometheus
 * text format 0.0.4) on 127.0.0.1.
 *
 * Invariants:
 *   WS1 It listens on a loopback address only, answers only GET and HEAD of those three paths, and
 *       shows counts and times, never a token, a path of the workspace or a command.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/** What the endpoints report (Worker.stats()). */
export interface WorkerStats {
  connected: boolean;
  /** Epoch ms of the last frame (or heartbeat) from the gateway; undefined before the first. */
  lastHeardAt: number | undefined;
  /** Dials started since the worker started (including ones that failed). */
  connectAttempts: number;
  /** Connections that reached `welcome`. */
  connections: number;
  /** Calls answered, by tool and outcome. */
  calls: { tool: string; outcome: "ok" | "error"; count: number }[];
}

export interface StatusServer {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

/** The default port of `roost worker --metrics-port` (docs/self-hosted-worker.md). */
export const defaultMetricsPort = 7781;

export function renderMetrics(stats: WorkerStats, now: number): string {
  const lines: string[] = [];
  const metric = (name: string, type: string, help: string, samples: string[]) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples);
  };
  metric(
    "roost_worker_connected",
    "gauge",
    "Whether the worker is connected to the gateway (1) or not (0).",
    [`roost_worker_connected ${stats.connected ? 1 : 0}`],
  );
  metric(
    "roost_worker_last_frame_age_seconds",
    "gauge",
    "Seconds since the last frame or heartbeat from the gateway (absent before the first).",
    stats.lastHeardAt === undefined
      ? []
      : [
          `roost_worker_last_frame_age_seconds ${(Math.max(0, now - stats.lastHeardAt) / 1000).toFixed(3)}`,
        ],
  );
  metric(
    "roost_worker_connect_attempts_total",
    "counter",
    "Connection attempts to the gateway since the worker started.",
    [`roost_worker_connect_attempts_total ${stats.connectAttempts}`],
  );
  metric(
    "roost_worker_connections_total",
    "counter",
    "Connections that the gateway accepted (welcome received) since the worker started.",
    [`roost_worker_connections_total ${stats.connections}`],
  );
  metric(
    "roost_worker_calls_total",
    "counter",
    "Calls the worker answered, by tool and outcome.",
    [...stats.calls]
      .sort((a, b) => a.tool.localeCompare(b.tool) || a.outcome.localeCompare(b.outcome))
      .map(
        (entry) =>
          `roost_worker_calls_total{tool="${escapeLabel(entry.tool)}",outcome="${entry.outcome}"} ${entry.count}`,
      ),
  );
  return `${lines.join("\n")}\n`;
}

/** Starts the endpoints on `host:port` (port 0: any free port). Rejects when the port is taken. */
export async function startStatusServer(options: {
  stats: () => WorkerStats;
  port: number;
  /** @default 127.0.0.1 */
  host?: string;
  now?: () => number;
}): Promise<StatusServer> {
  const host = options.host ?? "127.0.0.1";
  if (host !== "127.0.0.1" && host !== "::1" && host !== "localhost")
    throw new Error(`the worker's status server listens on loopback only, not ${host}`); // WS1
  const now = options.now ?? Date.now;
  // Node's HTTP server loads only where the status port is on (a self-hosted worker).
  const { createServer } = process.getBuiltinModule("node:http");
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://worker.invalid").pathname;
    const send = (status: number, body: string, type = "text/plain; charset=utf-8") => {
      response.writeHead(status, {
        "content-type": type,
        "content-length": Buffer.byteLength(body),
        "cache-control": "no-store",
      });
      response.end(request.method === "HEAD" ? undefined : body);
    };
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.setHeader("allow", "GET, HEAD");
      return send(405, "only GET and HEAD\n");
    }
    const stats = options.stats();
    switch (path) {
      case "/healthz":
        return send(200, "ok\n");
      case "/readyz":
        return stats.connected
          ? send(200, "connected to the gateway\n")
          : send(503, "not connected to the gateway\n");
      case "/metrics":
        return send(200, renderMetrics(stats, now()), "text/plain; version=0.0.4; charset=utf-8");
      default:
        return send(404, "not found (try /healthz, /readyz or /metrics)\n");
    }
  });
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
