/**
 * The worker's command MCP servers (mcp-servers.ts, MCPW1–MCPW5) against real processes: the MCP
 * SDK's published example stdio server, and a fixture server of ours for the misbehaviours.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { McpCommandServer } from "../protocol/index.ts";
import { createMcpServers, type McpServers } from "./mcp-servers.ts";

const require = createRequire(import.meta.url);
const sdkExamples = path.join(
  path.dirname(require.resolve("@modelcontextprotocol/sdk/client/index.js")),
  "..",
  "examples",
  "server",
);
const fixture = path.join(import.meta.dirname, "testing", "mcp-fixture-server.ts");

const fixtureServer = (
  env: Record<string, string> = {},
  args: string[] = [],
): McpCommandServer => ({
  name: "fixture",
  command: process.execPath,
  args: [fixture, ...args],
  env,
});

let servers: McpServers | undefined;
let workspace: string | undefined;
afterEach(async () => {
  await servers?.close();
  if (workspace !== undefined) rmSync(workspace, { recursive: true, force: true });
  servers = undefined;
});

function start(options: Partial<Parameters<typeof createMcpServers>[0]> = {}): McpServers {
  workspace = mkdtempSync(path.join(tmpdir(), "roost-mcp-"));
  servers = createMcpServers({
    workspace,
    commandEnv: { PATH: process.env.PATH ?? "/usr/bin:/bin", HTTP_PROXY: "http://proxy.test:1" },
    restartInitialMs: 100,
    ...options,
  });
  return servers;
}

const soon = (ms = 20_000) => Date.now() + ms;
const never = new AbortController().signal;

describe("command MCP servers on the worker", () => {
  it("MCPW6: a worker loads the MCP SDK only when its first server starts", () => {
    // A fresh Node process that records every module it resolves: the worker's modules loaded
    // and its MCP servers created (as at the worker's start), then one server started.
    const script = `
      import { registerHooks } from "node:module";
      const seen = [];
      registerHooks({ resolve(specifier, context, next) { seen.push(specifier); return next(specifier, context); } });
      const sdkLoaded = () => seen.some((name) => name.includes("@modelcontextprotocol"));
      await import(${JSON.stringify(path.join(import.meta.dirname, "worker.ts"))});
      const { createMcpServers } = await import(${JSON.stringify(path.join(import.meta.dirname, "mcp-servers.ts"))});
      const servers = createMcpServers({ workspace: process.cwd(), commandEnv: { PATH: process.env.PATH } });
      const atStart = sdkLoaded();
      const server = { name: "fixture", command: process.execPath, args: [${JSON.stringify(fixture)}], env: {} };
      await servers.tools([server], Date.now() + 20000, new AbortController().signal);
      await servers.close();
      console.log(JSON.stringify({ atStart, afterFirstServer: sdkLoaded() }));
    `;
    const output = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(JSON.parse(output.trim().split("\n").at(-1)!)).toEqual({
      atStart: false,
      afterFirstServer: true,
    });
  });

  it("lists and calls the MCP SDK's own example stdio server", async () => {
    const mcp = start();
    const example: McpCommandServer = {
      name: "weather",
      command: process.execPath,
      args: [path.join(sdkExamples, "mcpServerOutputSchema.js")],
      env: {},
    };
    const listed = await mcp.tools([example], soon(), never);
    expect(listed.servers[0]).toMatchObject({ name: "weather", ok: true });
    const tools = listed.servers[0]!.ok ? listed.servers[0]!.tools : [];
    expect(tools.map((tool) => tool.name)).toContain("get_weather");
    const result = await mcp.call(
      { server: example, tool: "get_weather", arguments: { city: "Oslo", country: "NO" } },
      soon(),
      never,
    );
    expect(result.isError).toBe(false);
    const text = result.content[0]?.type === "text" ? result.content[0].text : "";
    expect(JSON.parse(text)).toHaveProperty("temperature.celsius");
  });

  it("runs the server with the shell's environment (the proxy) plus its own env", async () => {
    const mcp = start();
    const server = fixtureServer({ MY_TOKEN: "t0ken-value" });
    const proxy = await mcp.call(
      { server, tool: "env", arguments: { name: "HTTP_PROXY" } },
      soon(),
      never,
    );
    expect(proxy.content).toEqual([{ type: "text", text: "http://proxy.test:1" }]);
    const own = await mcp.call(
      { server, tool: "env", arguments: { name: "MY_TOKEN" } },
      soon(),
      never,
    );
    expect(own.content).toEqual([{ type: "text", text: "t0ken-value" }]);
    // The worker's own variables are not passed on (only commandEnv and env).
    const worker = await mcp.call(
      { server, tool: "env", arguments: { name: "VITEST" } },
      soon(),
      never,
    );
    expect(worker.content).toEqual([{ type: "text", text: "(unset)" }]);
  });

  it("MCPW1: one process per server; changed settings replace it", async () => {
    const mcp = start();
    const pid = async (server: McpCommandServer) => {
      const result = await mcp.call({ server, tool: "pid", arguments: {} }, soon(), never);
      return result.content[0]?.type === "text" ? result.content[0].text : "";
    };
    const first = await pid(fixtureServer());
    expect(await pid(fixtureServer())).toBe(first);
    const changed = await pid(fixtureServer({ A: "b" }));
    expect(changed).not.toBe(first);
    expect(mcp.running()).toBe(1);
  });

  it("MCPW2: a server that crashes is restarted with backoff and answers again", async () => {
    const mcp = start();
    const server = fixtureServer();
    await expect(mcp.call({ server, tool: "crash", arguments: {} }, soon(), never)).rejects.toThrow(
      /fixture/,
    );
    const again = await mcp.call(
      { server, tool: "echo", arguments: { text: "back" } },
      soon(),
      never,
    );
    expect(again.content).toEqual([{ type: "text", text: "echo: back" }]);
  });

  it("a server that will not start is a clear error naming it", async () => {
    const mcp = start();
    const listed = await mcp.tools(
      [{ name: "missing", command: "/nonexistent/mcp-server", args: [], env: {} }],
      soon(),
      never,
    );
    expect(listed.servers[0]).toMatchObject({ ok: false });
    expect(listed.servers[0]!.ok ? "" : listed.servers[0]!.error).toMatch(
      /MCP server missing could not be started/,
    );
  });

  it("MCPW4: a server that never answers times out, and the others keep working", async () => {
    const mcp = start();
    const server = fixtureServer();
    await expect(
      mcp.call({ server, tool: "hang", arguments: {} }, Date.now() + 500, never),
    ).rejects.toMatchObject({ code: "timeout" });
    const after = await mcp.call(
      { server, tool: "echo", arguments: { text: "ok" } },
      soon(),
      never,
    );
    expect(after.content).toEqual([{ type: "text", text: "echo: ok" }]);
  });

  it("MCPW3: a flood of stderr and a huge result are cut; an endless stdout line closes the server", async () => {
    const mcp = start();
    const flood = await mcp.call(
      { server: fixtureServer(), tool: "flood", arguments: {} },
      soon(),
      never,
    );
    expect(flood.truncated).toBe(true);
    expect(flood.content[0]?.type === "text" && flood.content[0].text.length).toBe(100_000);

    const endless = await mcp.tools(
      [{ ...fixtureServer({}, ["--flood-stdout"]), name: "endless" }],
      Date.now() + 5000,
      never,
    );
    expect(endless.servers[0]).toMatchObject({ ok: false });
  });

  it("images and resources come back as parts", async () => {
    const mcp = start();
    const result = await mcp.call(
      { server: fixtureServer(), tool: "image", arguments: {} },
      soon(),
      never,
    );
    expect(result.content.map((part) => part.type)).toEqual(["image", "resource"]);
    expect(result.content[1]).toMatchObject({ uri: "file:///notes.txt", text: "a note" });
  });

  it("close stops every server for good", async () => {
    const mcp = start();
    await mcp.call({ server: fixtureServer(), tool: "pid", arguments: {} }, soon(), never);
    expect(mcp.running()).toBe(1);
    await mcp.close();
    expect(mcp.running()).toBe(0);
    await expect(
      mcp.call({ server: fixtureServer(), tool: "pid", arguments: {} }, soon(), never),
    ).rejects.toMatchObject({ code: "cancelled" });
  });
});
