/**
 * The command (stdio) MCP servers of a computer (docs/mcp.md, docs/worker-protocol.md §16): the
 * worker starts them as the computer's user, with the environment the shell tool's commands get
 * (the egress proxy's HTTP_PROXY and CA variables) plus the server's own `env`, and speaks MCP to
 * them with the official SDK client (StdioClientTransport).
 *
 * Invariants:
 *   MCPW1 one process per server name, running the settings last asked for: a call with other
 *         settings (a changed command, args or env) stops the old process and starts a new one.
 *   MCPW2 a server that exits on its own is restarted with backoff (1 s doubling to 60 s, reset
 *         after a minute up); a call meanwhile waits for the restart within its own deadline.
 *         `close` (the computer going to sleep, the worker stopping) stops them all, for good.
 *   MCPW3 nothing a server sends can grow the worker's memory without bound: one message is at
 *         most `maxMessageBytes` (the SDK's read buffer; a larger one closes the server), stderr
 *         keeps only its last 2,000 characters (for error messages), and a result's text and
 *         images are cut to mcpLimits.
 *   MCPW4 every request has a deadline (the call's): a server that never answers gives a
 *         `timeout` error, and the worker stays responsive.
 *   MCPW5 the server's command and args are passed as an argument vector, never through a
 *         shell's parsing; with a job prelude (the local provider's user cgroup) bash sources it
 *         and then `exec`s the vector.
 *   MCPW6 the SDK is imported when the first server starts, so a worker whose computer has no
 *         MCP server never loads it.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  mcpLimits,
  reduceMcpResult,
  type McpCallInput,
  type McpCallOutput,
  type McpCommandServer,
  type McpTool,
  type McpToolsOutput,
} from "../protocol/index.ts";
import { ToolFailure } from "./tool-context.ts";
import { nodeCrypto } from "./light-crypto.ts";

export interface McpServersOptions {
  /** Servers start here. */
  workspace: string;
  /** The shell tool's environment (proxy, CA, HOME); the server's env is added to it. */
  commandEnv: Readonly<Record<string, string>>;
  /** Sourced by bash before the server starts (MCPW5). */
  jobPrelude?: string | undefined;
  /** MCPW3 @default 4 MiB */
  maxMessageBytes?: number;
  /** MCPW2 @default 1000 */
  restartInitialMs?: number;
  /** @default 60_000 */
  restartMaxMs?: number;
  log?: (line: string) => void;
  now?: () => number;
}

export interface McpServers {
  tools(
    servers: McpCommandServer[],
    deadline: number,
    signal: AbortSignal,
  ): Promise<McpToolsOutput>;
  call(input: McpCallInput, deadline: number, signal: AbortSignal): Promise<McpCallOutput>;
  /** How many server processes are running (tests, status). */
  running(): number;
  close(): Promise<void>;
}

const stderrTailChars = 2000;

let sdk:
  | Promise<{
      Client: typeof import("@modelcontextprotocol/sdk/client/index.js").Client;
      StdioClientTransport: typeof import("@modelcontextprotocol/sdk/client/stdio.js").StdioClientTransport;
    }>
  | undefined;

/** MCPW6: the SDK's modules, imported once, on first use. */
function loadSdk() {
  sdk ??= Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
  ]).then(([client, stdio]) => ({
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
  }));
  return sdk;
}

interface Entry {
  server: McpCommandServer;
  key: string;
  client: Client | undefined;
  starting: Promise<Client> | undefined;
  /** Restarts since the last minute-long run (MCPW2). */
  failures: number;
  startedAt: number;
  notBefore: number;
  restartTimer: NodeJS.Timeout | undefined;
  stderr: string;
  lastError: string | undefined;
  stopped: boolean;
}

const keyOf = (server: McpCommandServer) =>
  nodeCrypto()
    .createHash("sha256")
    .update(JSON.stringify([server.command, server.args, Object.entries(server.env).sort()]))
    .digest("hex");

export function createMcpServers(options: McpServersOptions): McpServers {
  const now = options.now ?? Date.now;
  const log = options.log ?? (() => undefined);
  const maxMessageBytes = options.maxMessageBytes ?? 4 * 1024 * 1024;
  const initialMs = options.restartInitialMs ?? 1000;
  const maxMs = options.restartMaxMs ?? 60_000;
  const entries = new Map<string, Entry>();
  let closed = false;

  function describe(entry: Entry, what: string): string {
    const tail = entry.stderr.trim();
    return `MCP server ${entry.server.name} ${what}${tail === "" ? "" : `; its last output on stderr: ${tail.slice(-1000)}`}`;
  }

  async function launch(entry: Entry): Promise<Client> {
    // MCPW6: the SDK (its message schemas, ajv) is loaded when the first server
    // starts, not at the worker's start: an idle worker in a computer without MCP servers would
    // hold ~4 MiB of heap for it (decision 0021).
    const { Client, StdioClientTransport } = await loadSdk();
    if (entry.stopped || closed)
      throw new ToolFailure("cancelled", `MCP server ${entry.server.name} was stopped`);
    const { server } = entry;
    const env = { ...options.commandEnv, ...server.env };
    const vector =
      options.jobPrelude === undefined
        ? { command: server.command, args: server.args }
        : {
            command: "/bin/bash",
            args: [
              "-c",
              '. "$1"; shift; exec "$@"',
              "roost-mcp",
              options.jobPrelude,
              server.command,
              ...server.args,
            ],
          }; // MCPW5
    const transport = new StdioClientTransport({
      ...vector,
      env,
      cwd: options.workspace,
      stderr: "pipe",
      maxBufferSize: maxMessageBytes, // MCPW3
    });
    transport.stderr?.on("data", (chunk: Buffer) => {
      entry.stderr = (entry.stderr + chunk.toString("utf8")).slice(-stderrTailChars); // MCPW3
    });
    const client = new Client({ name: "roost-worker", version: "1" });
    entry.startedAt = now();
    client.onclose = () => {
      if (entry.client === client) entry.client = undefined;
      if (entry.stopped || closed || entries.get(server.name) !== entry) return;
      entry.lastError = describe(entry, "exited");
      log(`worker: ${entry.lastError}`);
      scheduleRestart(entry); // MCPW2
    };
    return client.connect(transport, { timeout: 30_000 }).then(
      () => {
        entry.client = client;
        return client;
      },
      async (error: unknown) => {
        await client.close().catch(() => undefined);
        entry.lastError = describe(
          entry,
          `could not be started: ${(error as Error).message} (check its command, args and env in the bot's settings)`,
        );
        throw new ToolFailure("io_error", entry.lastError);
      },
    );
  }

  function scheduleRestart(entry: Entry): void {
    if (now() - entry.startedAt >= 60_000) entry.failures = 0;
    const delay = Math.min(maxMs, initialMs * 2 ** entry.failures);
    entry.failures += 1;
    entry.notBefore = now() + delay;
    clearTimeout(entry.restartTimer);
    entry.restartTimer = setTimeout(() => {
      entry.restartTimer = undefined;
      if (!entry.stopped && !closed && entry.client === undefined)
        ready(entry, Number.POSITIVE_INFINITY).catch((error: unknown) =>
          log(`worker: ${(error as Error).message}`),
        );
    }, delay);
    entry.restartTimer.unref();
  }

  function stop(entry: Entry): Promise<void> {
    entry.stopped = true;
    clearTimeout(entry.restartTimer);
    const client = entry.client;
    entry.client = undefined;
    return client === undefined ? Promise.resolve() : client.close().catch(() => undefined);
  }

  /** MCPW1: the entry running these settings, replacing one with other settings. */
  async function entryFor(server: McpCommandServer): Promise<Entry> {
    if (closed) throw new ToolFailure("cancelled", "the computer is going to sleep");
    const key = keyOf(server);
    const known = entries.get(server.name);
    if (known?.key === key) return known;
    const entry: Entry = {
      server,
      key,
      client: undefined,
      starting: undefined,
      failures: 0,
      startedAt: 0,
      notBefore: 0,
      restartTimer: undefined,
      stderr: "",
      lastError: undefined,
      stopped: false,
    };
    entries.set(server.name, entry);
    if (known !== undefined) await stop(known);
    return entry;
  }

  /** A connected client, starting (or waiting for the restart of) the server within `deadline`. */
  async function ready(entry: Entry, deadline: number): Promise<Client> {
    if (entry.client !== undefined) return entry.client;
    if (entry.starting !== undefined) return entry.starting;
    const wait = entry.notBefore - now();
    if (wait > 0) {
      if (now() + wait > deadline)
        throw new ToolFailure(
          "io_error",
          `${entry.lastError ?? `MCP server ${entry.server.name} is restarting`}; it restarts in ${Math.ceil(wait / 1000)} s, try again then`,
        );
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (entry.client !== undefined) return entry.client;
      if (entry.starting !== undefined) return entry.starting;
    }
    entry.starting = launch(entry).finally(() => {
      entry.starting = undefined;
    });
    entry.starting.catch(() => {
      if (!entry.stopped && !closed) scheduleRestart(entry);
    });
    return entry.starting;
  }

  /** MCPW4: the SDK's own per-request timeout, from the call's deadline. */
  const requestOptions = (deadline: number, signal: AbortSignal) => ({
    timeout: Math.max(1, Math.min(deadline - now(), 24 * 60 * 60 * 1000)),
    signal,
  });

  function asFailure(error: unknown, entry: Entry, deadline: number): ToolFailure {
    if (error instanceof ToolFailure) return error;
    const message = (error as Error).message;
    if (now() >= deadline || /timed out|timeout/i.test(message))
      return new ToolFailure(
        "timeout",
        `MCP server ${entry.server.name} did not answer in time (${message})`,
      );
    return new ToolFailure("io_error", describe(entry, `failed: ${message}`));
  }

  async function listTools(server: McpCommandServer, deadline: number, signal: AbortSignal) {
    const entry = await entryFor(server);
    try {
      const client = await ready(entry, deadline);
      const tools: McpTool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(
          cursor === undefined ? {} : { cursor },
          requestOptions(deadline, signal),
        );
        for (const tool of page.tools)
          tools.push({
            name: tool.name,
            description: tool.description ?? "",
            inputSchema: tool.inputSchema,
          });
        cursor = page.nextCursor;
      } while (cursor !== undefined && tools.length < mcpLimits.maxToolsPerServer);
      return tools.slice(0, mcpLimits.maxToolsPerServer);
    } catch (error) {
      throw asFailure(error, entry, deadline);
    }
  }

  return {
    async tools(servers, deadline, signal) {
      const listed = await Promise.all(
        servers.map(async (server): Promise<McpToolsOutput["servers"][number]> => {
          try {
            return {
              name: server.name,
              ok: true,
              tools: await listTools(server, deadline, signal),
            };
          } catch (error) {
            return { name: server.name, ok: false, error: (error as Error).message.slice(0, 4096) };
          }
        }),
      );
      return { servers: listed };
    },

    async call(input, deadline, signal) {
      const entry = await entryFor(input.server);
      let result;
      try {
        const client = await ready(entry, deadline);
        result = await client.callTool(
          { name: input.tool, arguments: input.arguments },
          undefined,
          requestOptions(deadline, signal),
        );
      } catch (error) {
        throw asFailure(error, entry, deadline);
      }
      return reduceMcpResult(result as { content?: unknown[]; isError?: boolean });
    },

    running: () => [...entries.values()].filter((entry) => entry.client !== undefined).length,

    async close() {
      closed = true;
      await Promise.all([...entries.values()].map(stop)); // MCPW2
      entries.clear();
    },
  };
}
