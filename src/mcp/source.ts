/**
 * MCP tools (ARCHITECTURE.md §13 "Tool sources", docs/mcp.md): the tools of a bot's MCP servers
 * and its account's, as one tool source of the router. Command (stdio) servers run on the
 * account's computer, through its worker (`mcp.tools`, `mcp.call`); HTTP servers are reached from
 * this server (http-servers.ts).
 *
 * Invariants:
 *   MCP1 a turn is offered the tool list it started with: `specs` (once per turn, in the loop's
 *        journaled load-context) refreshes the lists (HTTP servers always, command servers when
 *        the computer's worker is connected) and remembers the turn's names; a call resolves its
 *        name against that turn's list, never a newer one. Lists change only between turns.
 *   MCP2 a server's list that cannot be refreshed is its last good one (kept in the store); the
 *        error is kept too, for the owner to see in the bot's settings (GET …/mcp-servers).
 *   MCP3 a bot's server hides a user server of the same name (the bot's settings win).
 *   MCP4 the names and specs are names.ts's (MCPN1–MCPN3).
 *   MCP5 every call is one journaled step (`context.run`, so its result is redacted: TOOL3) with
 *        the journal's call id: a replay is answered from the journal, and the worker's done-log
 *        answers a repeated `mcp.call` (W6) without calling the server twice.
 *   MCP6 a server that needs secrets (MCPS3) is offered, and runs, only when the turn's talking
 *        person is the bot's owner (`trigger.authorAccountId`, else the conversation's account):
 *        a teammate's chat never gets its tools, and so never its secrets.
 *   MCP7 secret values are resolved inside the call's step and never journaled (like CT8); a
 *        brokered secret reaches a command server as its placeholder (the proxy swaps it,
 *        decision 0024) and is refused for an HTTP server (no proxy there to swap it).
 *   MCP8 a command server's call holds the computer awake for the turn (CT3: released by
 *        `endTurn`), and wakes a sleeping computer, like the shell.
 */
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import {
  computerObjectName,
  type ComputerStatus,
  type EnsureAwakeRequest,
} from "../computers/index.ts";
import { CallFailedError, type DurableContext } from "../engine/index.ts";
import type { Gateway } from "../gateway/index.ts";
import type { MediaPart, ToolSpec } from "../models/index.ts";
import { brokerPlaceholder, type SecretCipher, type SecretsService } from "../secrets/index.ts";
import {
  mcpCallOutputSchema,
  mcpToolsOutputSchema,
  type McpCallOutput,
  type McpCommandServer,
} from "../protocol/index.ts";
import type { McpServerRecord, McpToolRecord, Store } from "../store/index.ts";
import {
  interruptedResult,
  type ToolCallContext,
  type ToolResult,
  type ToolSource,
  type ToolTurnContext,
} from "../tools/index.ts";
import type { HttpMcpClients, McpFetch } from "./http-servers.ts";
import { capTools, toToolSpec } from "./names.ts";
import { createStoredOAuthProvider } from "./oauth.ts";
import { fromStored, needsSecrets, type McpSettings, type McpValue } from "./settings.ts";

export interface McpToolsOptions {
  store: Store;
  cipher: SecretCipher;
  secrets: Pick<SecretsService, "envFor">;
  gateway: Pick<Gateway, "call" | "isConnected" | "worker">;
  /** The provider new computers get (as for the computer tools). */
  providerKind: string;
  http: HttpMcpClients;
  /** The guarded fetch for an account's HTTP servers (http-fetch.ts, MCPF1). */
  fetchFor(accountId: string): McpFetch;
  /** The OAuth callback's absolute URL (oauth.ts); absent: no OAuth for HTTP servers. */
  oauthRedirectUrl?: string;
  /** How long a listing may take at a turn's start. @default 15_000 */
  listTimeoutMs?: number;
  /** How long one call may take. @default 120_000 */
  callTimeoutMs?: number;
}

/** A tool of a turn's list: which server (and which settings of it) and which of its tools. */
interface Offered {
  record: McpServerRecord;
  tool: McpToolRecord;
}

/** MCP3: the servers a bot has: its own, and its account's under names it does not use. */
export async function serversOf(
  store: Store,
  accountId: string,
  botId: string,
): Promise<McpServerRecord[]> {
  const own = await store.listMcpServers("bot", botId);
  const names = new Set(own.map((record) => record.name));
  const shared = (await store.listMcpServers("user", accountId)).filter(
    (record) => !names.has(record.name),
  );
  return [...own, ...shared].sort((a, b) => a.name.localeCompare(b.name));
}

/** MCP7: a server's values resolved against the bot's secrets. */
async function resolveValues(
  values: Record<string, McpValue>,
  secrets: Pick<SecretsService, "envFor">,
  context: ToolTurnContext,
  server: string,
  where: "command" | "http",
): Promise<Record<string, string>> {
  const needed = Object.values(values).some((entry) => typeof entry !== "string");
  const env = needed ? await secrets.envFor(context.accountId, context.botId) : {};
  const resolved: Record<string, string> = {};
  for (const [name, entry] of Object.entries(values)) {
    if (typeof entry === "string") {
      resolved[name] = entry;
      continue;
    }
    const found = env[entry.secret];
    if (found === undefined)
      throw new Error(
        `MCP server ${server} needs the secret ${entry.secret}, which is not set: add it to the bot's or your secrets (PUT /v1/bots/{id}/secrets/${entry.secret})`,
      );
    if (where === "http" && found === brokerPlaceholder(entry.secret))
      throw new Error(
        `MCP server ${server} uses ${entry.secret}, a brokered secret: those are swapped by the computer's proxy, and an HTTP MCP server is reached from the Roost server; use a plain secret for it`,
      );
    resolved[name] = found;
  }
  return resolved;
}

export function createMcpTools(options: McpToolsOptions): ToolSource {
  const { store, cipher, gateway } = options;
  const listTimeoutMs = options.listTimeoutMs ?? 15_000;
  const callTimeoutMs = options.callTimeoutMs ?? 120_000;
  // MCP1: each turn's tools, by model-facing name.
  const turns = new Map<string, Map<string, Offered>>();
  // MCP8: turns holding the computer, per attempt (as in computer-tools.ts).
  const heldByAttempt = new WeakMap<DurableContext, Map<string, string>>();
  const heldIn = (durable: DurableContext) => {
    let held = heldByAttempt.get(durable);
    if (held === undefined) {
      held = new Map();
      heldByAttempt.set(durable, held);
    }
    return held;
  };

  /** MCP6 */
  async function allowedServers(context: ToolTurnContext) {
    const bot = await store.getBot(context.botId);
    if (bot === undefined) return [];
    const talker = context.trigger?.authorAccountId ?? context.accountId;
    const ownerChat = talker === bot.accountId;
    const allowed: { record: McpServerRecord; settings: McpSettings }[] = [];
    for (const record of await serversOf(store, context.accountId, context.botId)) {
      const settings = fromStored(record, cipher);
      if (needsSecrets(record, settings) && !ownerChat) continue; // MCP6
      allowed.push({ record, settings });
    }
    return allowed;
  }

  const httpTarget = async (
    record: McpServerRecord,
    settings: Extract<McpSettings, { transport: "http" }>,
    context: ToolTurnContext,
  ) => ({
    key: `${record.scope}:${record.ownerId}:${record.name}:${record.updatedAt}`,
    url: settings.url,
    headers: await resolveValues(settings.headers, options.secrets, context, record.name, "http"), // MCP7
    fetch: options.fetchFor(context.accountId),
    ...(options.oauthRedirectUrl === undefined
      ? {}
      : {
          authProvider: createStoredOAuthProvider({
            store,
            cipher,
            record,
            redirectUrl: options.oauthRedirectUrl,
          }),
        }),
  });

  const commandServer = async (
    record: McpServerRecord,
    settings: Extract<McpSettings, { transport: "command" }>,
    context: ToolTurnContext,
  ): Promise<McpCommandServer> => ({
    name: record.name,
    command: settings.command,
    args: settings.args,
    env: await resolveValues(settings.env, options.secrets, context, record.name, "command"), // MCP7
  });

  const record = (
    server: McpServerRecord,
    outcome: { tools: McpToolRecord[] } | { error: string },
  ) => store.recordMcpListing(server, outcome).catch(() => undefined);

  /** MCP1, MCP2: refreshes what can be refreshed; answers each server's current list. */
  async function refresh(
    servers: { record: McpServerRecord; settings: McpSettings }[],
    context: ToolTurnContext,
  ): Promise<Map<McpServerRecord, McpToolRecord[]>> {
    const lists = new Map<McpServerRecord, McpToolRecord[]>();
    for (const { record: server } of servers) lists.set(server, server.tools ?? []);
    const http = servers.filter((entry) => entry.settings.transport === "http");
    await Promise.all(
      http.map(async ({ record: server, settings }) => {
        try {
          const target = await httpTarget(
            server,
            settings as Extract<McpSettings, { transport: "http" }>,
            context,
          );
          const tools = capTools(server.name, await options.http.tools(target, listTimeoutMs));
          lists.set(server, tools);
          await record(server, { tools });
        } catch (error) {
          await record(server, { error: describeError(server.name, error) }); // MCP2
        }
      }),
    );
    const commands = servers.filter((entry) => entry.settings.transport === "command");
    if (commands.length === 0) return lists;
    const computer = await store.ensureComputer(context.accountId, options.providerKind);
    const worker = gateway.worker(computer.id);
    if (worker === undefined || !worker.capabilities.includes("mcp.tools")) return lists; // MCP2
    const resolved: McpCommandServer[] = [];
    for (const { record: server, settings } of commands) {
      try {
        resolved.push(
          await commandServer(
            server,
            settings as Extract<McpSettings, { transport: "command" }>,
            context,
          ),
        );
      } catch (error) {
        await record(server, { error: (error as Error).message });
      }
    }
    try {
      const result = await gateway.call(computer.id, {
        callId: `mcp-tools:${context.turnId}`,
        tool: "mcp.tools",
        input: { servers: resolved },
        timeoutMs: listTimeoutMs,
      });
      if (!result.ok) throw new Error(`${result.error.code}: ${result.error.message}`);
      const output = mcpToolsOutputSchema.parse(result.output);
      for (const listed of output.servers) {
        const server = commands.find((entry) => entry.record.name === listed.name)?.record;
        if (server === undefined) continue;
        if (listed.ok) {
          const tools = capTools(server.name, listed.tools);
          lists.set(server, tools);
          await record(server, { tools });
        } else await record(server, { error: listed.error });
      }
    } catch (error) {
      for (const { record: server } of commands)
        await record(server, {
          error: `the computer could not list the server's tools: ${(error as Error).message}`,
        });
    }
    return lists;
  }

  function remember(turnId: string, lists: Map<McpServerRecord, McpToolRecord[]>): ToolSpec[] {
    const offered = new Map<string, Offered>();
    const specs: ToolSpec[] = [];
    for (const [server, tools] of lists)
      for (const tool of tools) {
        if (offered.has(tool.name)) continue;
        offered.set(tool.name, { record: server, tool });
        specs.push(toToolSpec(tool)); // MCP4
      }
    turns.set(turnId, offered);
    return specs;
  }

  /** MCP1: the turn's list; rebuilt from the stored lists after a restart of this process. */
  async function offeredIn(context: ToolTurnContext): Promise<Map<string, Offered>> {
    const known = turns.get(context.turnId);
    if (known !== undefined) return known;
    const servers = await allowedServers(context);
    remember(
      context.turnId,
      new Map(servers.map(({ record: server }) => [server, server.tools ?? []])),
    );
    return turns.get(context.turnId)!;
  }

  /** MCP6 at call time, inside the call's step: the server's current record and settings. */
  async function currentServer(offered: Offered, context: ToolTurnContext) {
    const servers = await allowedServers(context);
    return servers.find((entry) => entry.record.name === offered.record.name);
  }

  const goneMessage = (name: string, offered: Offered) =>
    `${name} is no longer available: its MCP server ${offered.record.name} was removed, changed kind, or is not usable in this chat.`;

  async function runCommand(
    offered: Offered,
    args: Record<string, unknown>,
    context: ToolCallContext,
    name: string,
  ): Promise<ToolResult> {
    const held = heldIn(context.durable);
    const computerId =
      held.get(context.turnId) ??
      (await context.run("computer", async () => {
        const computer = await store.ensureComputer(context.accountId, options.providerKind);
        return computer.id;
      }));
    let status: ComputerStatus;
    try {
      status = await context.durable.call<ComputerStatus>(
        { object: computerObjectName, key: computerId, handler: "ensureAwake" },
        {
          accountId: context.accountId,
          holder: context.turnId,
          allowWake: true,
        } satisfies EnsureAwakeRequest,
      ); // MCP8
    } catch (error) {
      if (error instanceof CallFailedError)
        return { output: `The computer could not be woken: ${error.message}`, isError: true };
      throw error;
    }
    held.set(context.turnId, computerId);
    const ready =
      status.kind === "self-hosted" ? status.state === "connected" : status.state === "awake";
    if (!ready)
      return {
        output: `The computer is not available (${status.state}); try again later.`,
        isError: true,
      };
    return context.run(`tool:${name}`, async (signal) => {
      const started = Date.now();
      if (signal.aborted) return interruptedResult(name);
      const current = await currentServer(offered, context);
      if (current?.settings.transport !== "command")
        return { output: goneMessage(name, offered), isError: true };
      let server: McpCommandServer;
      try {
        server = await commandServer(current.record, current.settings, context); // MCP7: inside the step
      } catch (error) {
        return failure(current.record, name, (error as Error).message, started);
      }
      try {
        const result = await gateway.call(
          computerId,
          {
            callId: context.callId, // MCP5
            tool: "mcp.call",
            input: { server, tool: offered.tool.tool, arguments: args },
            timeoutMs: callTimeoutMs,
          },
          { signal },
        );
        if (!result.ok)
          return failure(
            current.record,
            name,
            `${result.error.code}: ${result.error.message}`,
            started,
          );
        const parsed = mcpCallOutputSchema.safeParse(result.output);
        if (!parsed.success)
          return failure(
            current.record,
            name,
            "the computer's worker answered in a shape this server does not know",
            started,
          );
        return {
          ...formatResult(parsed.data, current.record.name),
          durationMs: Date.now() - started,
        };
      } catch (error) {
        if (signal.aborted) return interruptedResult(name, Date.now() - started);
        return failure(current.record, name, describeError(current.record.name, error), started);
      }
    });
  }

  async function failure(
    server: McpServerRecord,
    name: string,
    message: string,
    started: number,
  ): Promise<ToolResult> {
    await record(server, { error: message }); // MCP2: the owner sees it
    return {
      output: `${name} failed: ${message}`,
      isError: true,
      details: { error: "mcp_error", server: server.name },
      durationMs: Date.now() - started,
    };
  }

  return {
    name: "mcp",

    async specs(context) {
      const servers = await allowedServers(context);
      if (servers.length === 0) {
        turns.set(context.turnId, new Map());
        return [];
      }
      return remember(context.turnId, await refresh(servers, context)); // MCP1
    },

    async execute(name, input, context) {
      const offered = (await offeredIn(context)).get(name);
      if (offered === undefined)
        return { output: `There is no tool named ${JSON.stringify(name)}.`, isError: true };
      if (typeof input !== "object" || input === null || Array.isArray(input))
        return { output: `${name} takes a JSON object of arguments.`, isError: true };
      // The server's settings now (they may have changed since the turn started: the call runs
      // the current ones, under the name the turn was offered). Only its kind is journaled: it
      // decides which steps follow; the settings themselves are read inside the call's step.
      const transport = await context.run(
        `mcp-server:${name}`,
        async () => (await currentServer(offered, context))?.record.transport ?? null,
      );
      if (transport === null) return { output: goneMessage(name, offered), isError: true };
      const args = input as Record<string, unknown>;
      if (transport === "command") return runCommand(offered, args, context, name);
      return context.run(`tool:${name}`, async (signal) => {
        const started = Date.now();
        if (signal.aborted) return interruptedResult(name);
        const current = await currentServer(offered, context);
        if (current?.settings.transport !== "http")
          return { output: goneMessage(name, offered), isError: true };
        try {
          const http = await httpTarget(current.record, current.settings, context); // MCP7
          const result = await options.http.call(
            http,
            { tool: offered.tool.tool, arguments: args },
            callTimeoutMs,
            signal,
          );
          return { ...formatResult(result, current.record.name), durationMs: Date.now() - started };
        } catch (error) {
          if (signal.aborted) return interruptedResult(name, Date.now() - started);
          return failure(current.record, name, describeError(current.record.name, error), started);
        }
      });
    },

    async endTurn(context) {
      turns.delete(context.turnId);
      const held = heldIn(context.durable);
      const computerId = held.get(context.turnId);
      if (computerId === undefined) return;
      held.delete(context.turnId);
      context.durable.send(
        { object: computerObjectName, key: computerId, handler: "release" },
        { holder: context.turnId },
      ); // MCP8
    },
  };
}

/** A clear tool error for what went wrong talking to a server. */
function describeError(server: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const name = error instanceof Error ? error.name : "";
  if (error instanceof UnauthorizedError || name === "UnauthorizedError")
    return `MCP server ${server} needs authorization: the bot's owner connects it in the bot's settings (POST …/mcp-servers/${server}/authorize)`;
  if (name === "EgressRefusedError") return `MCP server ${server} was not contacted: ${message}`;
  if (/timed out|timeout/i.test(message))
    return `MCP server ${server} did not answer in time (${message})`;
  return `MCP server ${server}: ${message}`;
}

/** A call's result as the model sees it: text, images (as media) and resources. */
export function formatResult(result: McpCallOutput, server: string): ToolResult {
  const lines: string[] = [];
  const media: MediaPart[] = [];
  for (const part of result.content) {
    switch (part.type) {
      case "text":
        lines.push(part.text);
        break;
      case "image":
        media.push({ type: "image", mimeType: part.mimeType, data: part.data });
        lines.push(
          `(image ${media.length}: ${part.mimeType}, attached for models that can see images)`,
        );
        break;
      case "resource":
        lines.push(
          part.text !== undefined
            ? `Resource ${part.uri}${part.mimeType === undefined ? "" : ` (${part.mimeType})`}:\n${part.text}`
            : `Resource ${part.uri}: binary (${part.blobChars ?? 0} base64 characters), not shown`,
        );
        break;
      case "note":
        lines.push(part.text);
        break;
    }
  }
  if (result.truncated) lines.push("(The result was cut to Roost's limits.)");
  return {
    output: lines.length === 0 ? "(no content)" : lines.join("\n"),
    isError: result.isError,
    ...(media.length === 0 ? {} : { media }),
    details: { server, truncated: result.truncated },
  };
}
