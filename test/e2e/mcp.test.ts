/**
 * Command (stdio) MCP servers end to end (docs/mcp.md): set through the API, started by the
 * worker on a real computer (the test's provider; the isolated `local` one as root) as the
 * computer's user, called by the demo model as `mcp__<server>__<tool>`: the MCP SDK's own example
 * stdio server and our fixture server. A secret in a server's env reaches the server and comes
 * back redacted; a crashed server is restarted and answers again; a flood is cut; names no
 * provider accepts are sanitised; the owner sees the last error in the bot's settings.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient } from "../support/api-client.ts";
import { testComputerProvider } from "../support/provider.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";

const repo = resolve(import.meta.dirname, "../..");
const fixturePath = "src/worker/testing/mcp-fixture-server.ts";
const examplePath =
  "node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/mcpServerOutputSchema.js";
const secretValue = "mcp-secret-value-8f3a9c1d";

describe(`command MCP servers end to end (${testComputerProvider} provider, demo model)`, () => {
  let dataDir: string;
  let roost: RoostProcess;
  let api: ReturnType<typeof apiClient>;
  let botId: string;
  let conversationId: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-mcp-"));
    roost = await createRoostProcess({
      dataDir,
      env: { ROOST_COMPUTER_PROVIDER: testComputerProvider, ROOST_FOLLOW_UP_WINDOW_MS: "200" },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
    botId = (await api.createBot("mcp")).id;
    conversationId = (await api.createConversation(botId)).id;
  }, 120_000);
  afterAll(async () => {
    await roost?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function turn(text: string) {
    const before = (await api.steps(conversationId)).filter((step) => step.kind === "reply").length;
    await api.send(conversationId, text);
    const steps = await api.waitForSteps(conversationId, "reply", before + 1, 90_000);
    return steps.filter((step) => step.kind === "tool").at(-1)!;
  }

  it("the SDK's example server and ours run on the computer and answer the model", async () => {
    // Where Roost's checkout and Node are, as the computer sees them (the local provider mounts
    // them at /opt/roost and /opt/node; the process provider runs on the host).
    const probe = await turn(
      `$ if [ -f /opt/roost/${fixturePath} ]; then echo "inside $(command -v node || echo /opt/node/bin/node)"; else echo outside; fi`,
    );
    const inside = /inside (\S+)/.exec(String(probe.payload.output));
    const root = inside === null ? repo : "/opt/roost";
    const node = inside?.[1] ?? process.execPath;

    await api.call("PUT", `/v1/bots/${botId}/secrets/FIX_TOKEN`, { value: secretValue });
    const put = await api.call<Api.McpServerView>("PUT", `/v1/bots/${botId}/mcp-servers/fixture`, {
      command: node,
      args: [`${root}/${fixturePath}`],
      env: { FIX_TOKEN: { secret: "FIX_TOKEN" }, PLAIN: "plain-value" },
    });
    expect(put).toMatchObject({ usesSecrets: true, env: { PLAIN: { hidden: true } } });
    await api.call("PUT", `/v1/me/mcp-servers/weather`, {
      command: node,
      args: [`${root}/${examplePath}`],
    });

    // The computer is awake: this turn's start lists the servers' tools (MCP1).
    const echo = await turn('call mcp__fixture__echo {"text":"hello"}');
    expect(echo.payload).toMatchObject({
      name: "mcp__fixture__echo",
      isError: false,
      output: "echo: hello",
    });

    const weather = await turn('call mcp__weather__get_weather {"city":"Oslo","country":"NO"}');
    expect(weather.payload).toMatchObject({ name: "mcp__weather__get_weather", isError: false });
    expect(String(weather.payload.output)).toContain("celsius");

    // The secret reached the server's environment; what comes back is redacted (TOOL3).
    const secret = await turn('call mcp__fixture__env {"name":"FIX_TOKEN"}');
    expect(secret.payload.output).toBe("[REDACTED]");
    const plain = await turn('call mcp__fixture__env {"name":"PLAIN"}');
    expect(plain.payload.output).toBe("plain-value");
    if (inside !== null) {
      // Through the computer's egress proxy, like the shell.
      const proxy = await turn('call mcp__fixture__env {"name":"HTTP_PROXY"}');
      expect(String(proxy.payload.output)).not.toBe("(unset)");
    }

    const image = await turn("call mcp__fixture__image {}");
    expect(String(image.payload.output)).toContain("(image 1: image/png");
    expect(String(image.payload.output)).toContain("Resource file:///notes.txt");

    // MCPN1: names no provider accepts are sanitised; the owner sees them in the settings.
    const settings = await api.call<Api.McpServerView>(
      "GET",
      `/v1/bots/${botId}/mcp-servers/fixture`,
    );
    expect(settings.status.tools).toContain("mcp__fixture__bad_name_with_colons");
    for (const name of settings.status.tools ?? []) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    const colons = await turn("call mcp__fixture__bad_name_with_colons {}");
    expect(colons.payload.output).toBe("colons ok");

    // MCPW2: a crash is a clear tool error, and the next call finds the server restarted.
    const crash = await turn("call mcp__fixture__crash {}");
    expect(crash.payload).toMatchObject({ isError: true });
    expect(String(crash.payload.output)).toMatch(/mcp__fixture__crash failed/);
    expect(
      (await api.call<Api.McpServerView>("GET", `/v1/bots/${botId}/mcp-servers/fixture`)).status
        .lastError,
    ).toMatch(/fixture/);
    const again = await turn('call mcp__fixture__echo {"text":"again"}');
    expect(again.payload).toMatchObject({ isError: false, output: "echo: again" });

    // MCPW3: a flood is cut to the limits.
    const flood = await turn("call mcp__fixture__flood {}");
    expect(String(flood.payload.output)).toContain("(The result was cut to Roost's limits.)");

    const steps = JSON.stringify(await api.steps(conversationId));
    expect(steps).not.toContain(secretValue);
  }, 300_000);

  it("MCPF1 attack: HTTP servers at the metadata address or at Roost's own API are never contacted", async () => {
    const apiPort = new URL(roost.url).port;
    await api.call("PUT", `/v1/bots/${botId}/mcp-servers/metadata`, {
      url: "http://169.254.169.254/latest/mcp",
    });
    await api.call("PUT", `/v1/bots/${botId}/mcp-servers/itself`, {
      url: `http://127.0.0.1:${apiPort}/v1/mcp`,
    });
    await turn("hello");
    const metadata = await api.call<Api.McpServerView>(
      "GET",
      `/v1/bots/${botId}/mcp-servers/metadata`,
    );
    expect(metadata.status.lastError).toMatch(/was not contacted: .*link-local/);
    const itself = await api.call<Api.McpServerView>("GET", `/v1/bots/${botId}/mcp-servers/itself`);
    expect(itself.status.lastError).toMatch(/was not contacted: .*Roost host itself/);
    expect(itself.status.tools).toBeNull();
  }, 120_000);
});
