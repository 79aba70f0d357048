/** What `roost worker`'s command line means, without starting anything (resolveSelfHostedWorker). */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseCommand } from "./args.ts";
import { CliError, type CliIo } from "./io.ts";
import { runCli } from "./main.ts";
import { resolveSelfHostedWorker, workerCommand } from "./worker.ts";

const resolve = (args: string[], env: Record<string, string> = {}, cwd = "/home/me/bot") =>
  resolveSelfHostedWorker(parseCommand(workerCommand.spec, args), env, cwd);

describe("roost worker's settings", () => {
  it("turns the server URL into its gateway URL, keeping a path prefix", () => {
    expect(resolve(["--server", "https://roost.example.com", "--token", "t"]).gatewayUrl).toBe(
      "wss://roost.example.com/v1/gateway",
    );
    expect(resolve(["--server", "http://127.0.0.1:7700/", "--token", "t"]).gatewayUrl).toBe(
      "ws://127.0.0.1:7700/v1/gateway",
    );
    expect(resolve(["--server", "https://example.com/roost", "--token", "t"]).gatewayUrl).toBe(
      "wss://example.com/roost/v1/gateway",
    );
    expect(resolve(["--server", "wss://example.com/v1/gateway", "--token", "t"]).gatewayUrl).toBe(
      "wss://example.com/v1/gateway",
    );
  });

  it("defaults the workspace to the current folder, the state to <workspace>/.roost-worker and the metrics to 127.0.0.1:7781", () => {
    const config = resolve(["--server", "https://r.example", "--token", "t"]);
    expect(config).toMatchObject({
      workspace: "/home/me/bot",
      stateDir: "/home/me/bot/.roost-worker",
      metricsPort: 7781,
      token: "t",
      tokenFile: undefined,
      proxy: undefined,
      warnings: [],
    });
    const elsewhere = resolve([
      "--server",
      "https://r.example",
      "--token-file",
      "token",
      "--workspace",
      "../work",
      "--metrics-port",
      "0",
    ]);
    expect(elsewhere).toMatchObject({
      workspace: "/home/me/work",
      stateDir: "/home/me/work/.roost-worker",
      tokenFile: "/home/me/bot/token",
      metricsPort: 0,
    });
  });

  it("flags beat the environment, and the environment works without flags", () => {
    const env = {
      ROOST_URL: "https://from-env.example",
      ROOST_WORKER_TOKEN: "env-token",
      ROOST_WORKSPACE: "/srv/bot",
      ROOST_WORKER_METRICS_PORT: "9100",
    };
    expect(resolve([], env)).toMatchObject({
      serverUrl: "https://from-env.example",
      token: "env-token",
      workspace: "/srv/bot",
      metricsPort: 9100,
    });
    expect(resolve(["--server", "https://flag.example", "--token", "flag"], env)).toMatchObject({
      serverUrl: "https://flag.example",
      token: "flag",
    });
    // A token file given by flag beats a token in the environment (not "both given").
    expect(resolve(["--token-file", "/run/token"], env)).toMatchObject({
      token: undefined,
      tokenFile: "/run/token",
    });
  });

  it("takes the proxy for the gateway's scheme from the environment, unless NO_PROXY exempts it", () => {
    const env = { HTTPS_PROXY: "http://proxy.corp:3128", HTTP_PROXY: "http://plain.corp:8080" };
    expect(resolve(["--server", "https://r.example", "--token", "t"], env).proxy?.href).toBe(
      "http://proxy.corp:3128/",
    );
    expect(resolve(["--server", "http://r.internal", "--token", "t"], env).proxy?.href).toBe(
      "http://plain.corp:8080/",
    );
    expect(
      resolve(["--server", "https://r.example", "--token", "t"], { ...env, NO_PROXY: "r.example" })
        .proxy,
    ).toBeUndefined();
  });

  it("warns about a token sent in clear to another host, not to this one", () => {
    expect(resolve(["--server", "http://roost.lan:7700", "--token", "t"]).warnings).toEqual([
      expect.stringMatching(/plain http:\/\/ on roost\.lan.*unencrypted/),
    ]);
    expect(resolve(["--server", "http://localhost:7700", "--token", "t"]).warnings).toEqual([]);
  });

  it("refuses what it cannot use, with exit status 2 and what to do", () => {
    const refused = (args: string[], pattern: RegExp, env: Record<string, string> = {}) => {
      let error: unknown;
      try {
        resolve(args, env);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(CliError);
      expect((error as CliError).exitCode).toBe(2);
      expect((error as CliError).message).toMatch(pattern);
    };
    refused(["--token", "t"], /say which server with --server URL/);
    refused(["--server", "https://r.example"], /worker token is required/);
    refused(["--server", "https://r.example", "--token", "t", "--token-file", "f"], /not both/);
    refused(["--server", "ftp://r.example", "--token", "t"], /http:\/\/ or https:\/\/ URL/);
    refused(["--server", "https://r.example?x=1", "--token", "t"], /without a query/);
    refused(["--server", "not a url", "--token", "t"], /must be the server's URL/);
    refused(["--server", "https://r.example", "--token", "t", "--metrics-port", "99999"], /port/);
    refused(["--server", "https://r.example", "--token", "t"], /SOCKS proxies are not supported/, {
      HTTPS_PROXY: "socks5://p:1080",
    });
  });
});

describe("roost worker's start", () => {
  it("refuses a state folder it cannot make, with exit status 2 and what to do, and without hanging under /proc", async () => {
    const workspace = mkdtempSync(path.join(tmpdir(), "roost-cli-worker-"));
    try {
      writeFileSync(path.join(workspace, "a-file"), "");
      for (const stateDir of [
        "/proc/self/roost-none/state",
        path.join(workspace, "a-file", "state"),
      ]) {
        let stderr = "";
        const io: CliIo = {
          stdout: { write: () => true },
          stderr: { write: (text: string) => (stderr += text) },
          stdin: (async function* () {})(),
          env: {},
        };
        const args = ["worker", "--server", "http://127.0.0.1:9", "--token", "t"];
        const code = await runCli([...args, "--workspace", workspace, "--state-dir", stateDir], io);
        expect(code).toBe(2);
        expect(stderr).toContain(`cannot use ${stateDir} as the state folder`);
        expect(stderr).toContain("pass --state-dir");
      }
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  }, 10_000);
});
