/**
 * Helpers for the engine's integration tests: temp data dirs, a real SDK endpoint on
 * 127.0.0.1:0, ingress calls, and process inspection. Not used by production code.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer, type Http2Server } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as restate from "@restatedev/restate-sdk";
import { findFreePort } from "../embedded-restate.ts";
import { readProcessArgv } from "../orphans.ts";

export {
  createMemoryDurable,
  ReplayMismatchError,
  type JournalEntry,
  type MemoryDurable,
  type MemoryDurableOptions,
  type MemoryObjects,
} from "./memory-durable.ts";

/** A fresh temp dir and its removal. */
export async function makeTempDir(): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), "roost-engine-"));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** Three distinct free ports for ingress, admin and node. */
export async function freePorts(): Promise<{
  ingressPort: number;
  adminPort: number;
  nodePort: number;
}> {
  const ingressPort = await findFreePort();
  const adminPort = await findFreePort([ingressPort]);
  const nodePort = await findFreePort([ingressPort, adminPort]);
  return { ingressPort, adminPort, nodePort };
}

/** A virtual object counting per key: `add` (exclusive) and `get` (shared). */
export const counter = restate.object({
  name: "Counter",
  handlers: {
    add: async (ctx: restate.ObjectContext, amount: number): Promise<number> => {
      const next = ((await ctx.get<number>("count")) ?? 0) + amount;
      ctx.set("count", next);
      return next;
    },
    get: restate.handlers.object.shared(
      async (ctx: restate.ObjectSharedContext): Promise<number> => {
        return (await ctx.get<number>("count")) ?? 0;
      },
    ),
  },
});

/** Outcome of {@link waiter}'s `wait`. */
export type WaitOutcome = { resolved: string } | { timedOut: true };

/**
 * The conversation loop's wake-up pattern: an exclusive handler publishes its invocation id in
 * state and waits on a named signal with a timeout; a shared handler (which does not queue
 * behind the exclusive one) reads the id and resolves the signal.
 */
export const waiter = restate.object({
  name: "Waiter",
  handlers: {
    wait: async (ctx: restate.ObjectContext, timeoutMs: number): Promise<WaitOutcome> => {
      ctx.set("waiting", ctx.request().id);
      try {
        const value = await ctx.signal<string>("wake").orTimeout(timeoutMs);
        return { resolved: value };
      } catch (error) {
        if (error instanceof restate.TimeoutError) return { timedOut: true };
        throw error;
      } finally {
        ctx.clear("waiting");
      }
    },
    wake: restate.handlers.object.shared(
      async (ctx: restate.ObjectSharedContext, value: string): Promise<boolean> => {
        const id = await ctx.get<string>("waiting");
        if (id === null) return false;
        ctx
          .invocation(id as restate.InvocationId)
          .signal<string>("wake")
          .resolve(value);
        return true;
      },
    ),
  },
});

/** An h2c SDK endpoint serving `services` on 127.0.0.1 (port 0 = any). */
export interface ServiceEndpoint {
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function serveServices(
  services: Parameters<typeof restate.createEndpointHandler>[0]["services"],
  port = 0,
): Promise<ServiceEndpoint> {
  // The SDK logs every invocation and every dropped connection (expected here); keep test output readable.
  const server: Http2Server = createServer(
    restate.createEndpointHandler({ services, logger: () => undefined }),
  );
  const sessions = new Set<import("node:http2").ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const boundPort = typeof address === "object" && address !== null ? address.port : port;
  return {
    url: `http://127.0.0.1:${boundPort}`,
    port: boundPort,
    close: () =>
      new Promise<void>((resolve) => {
        // Restate keeps h2 sessions open; destroy them so the port is really released.
        for (const session of sessions) session.destroy();
        server.close(() => resolve());
      }),
  };
}

/** POSTs JSON to the ingress and returns the parsed answer; throws with the body on non-2xx. */
export async function callIngress<T>(ingressUrl: string, path: string, body: unknown): Promise<T> {
  const response = await fetch(`${ingressUrl}/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`ingress ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

/** Sends (fire-and-forget) through the ingress and returns the invocation id. */
export async function sendIngress(
  ingressUrl: string,
  path: string,
  body: unknown,
): Promise<string> {
  const answer = await callIngress<{ invocationId: string }>(ingressUrl, `${path}/send`, body);
  return answer.invocationId;
}

/** Waits for the result of an invocation through the ingress attach API. */
export async function attachIngress<T>(ingressUrl: string, invocationId: string): Promise<T> {
  const response = await fetch(`${ingressUrl}/restate/invocation/${invocationId}/attach`, {
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`attach ${invocationId} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

/** Runs a SQL query against restate's introspection tables (admin `POST /query`). */
export async function queryAdmin<Row>(adminUrl: string, sql: string): Promise<Row[]> {
  const response = await fetch(`${adminUrl}/query`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ query: sql }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`query answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { rows: Row[] }).rows;
}

/** Polls `check` until it returns a value other than undefined; throws after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (let delayMs = 10; ; delayMs = Math.min(delayMs * 2, 200)) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? ` (last error: ${lastError.message})` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
}

/** Pids of processes whose argv contains every one of `parts`. */
export async function findProcesses(...parts: string[]): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = await readProcessArgv(Number(entry));
    if (argv !== undefined && parts.every((part) => argv.includes(part))) found.push(Number(entry));
  }
  return found;
}

/** Resident set size of a process in KiB (from /proc/PID/status). */
export async function residentKib(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match?.[1] === undefined ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

/** Local addresses (ip:port, hex decoded) on which `pid`'s sockets listen, from /proc/net/tcp{,6}. */
export async function listeningAddresses(ports: readonly number[]): Promise<string[]> {
  const found: string[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      const state = fields[3];
      if (local === undefined || state !== "0A") continue; // 0A = LISTEN
      const [ipHex, portHex] = local.split(":");
      if (ipHex === undefined || portHex === undefined) continue;
      const port = parseInt(portHex, 16);
      if (!ports.includes(port)) continue;
      found.push(`${decodeIp(ipHex)}:${port}`);
    }
  }
  return found;
}

function decodeIp(hex: string): string {
  if (hex.length === 8) {
    const bytes = hex.match(/../g) ?? [];
    return bytes
      .reverse()
      .map((byte) => parseInt(byte, 16))
      .join(".");
  }
  return hex === "00000000000000000000000000000000" ? "::" : `ipv6:${hex}`;
}
