import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, test } from "vitest";
import {
  nextSupervisorState,
  resolveRestateBinary,
  type SupervisorInput,
  type SupervisorState,
} from "./embedded-restate.ts";
import { isOurRestateServer } from "./orphans.ts";
import {
  renderRestateConfig,
  restateConfigDefaults,
  retryForeverAttempts,
} from "./restate-config.ts";
import { ensureRequestIdentity } from "./request-identity.ts";
import { makeTempDir } from "./testing/index.ts";

describe("restate config", () => {
  // restate-server ignores unknown keys silently, so a typo would only show as a default value.
  test("every key we write is understood by restate-server (--dump-config echoes our values)", async () => {
    const dir = await makeTempDir();
    try {
      const configPath = join(dir.path, "restate.toml");
      const identity = await ensureRequestIdentity(dir.path);
      await writeFile(
        configPath,
        renderRestateConfig({
          ...restateConfigDefaults,
          baseDir: join(dir.path, "restate"),
          ingressPort: 18_081,
          adminPort: 19_071,
          nodePort: 15_123,
          requestIdentityPemFile: identity.privateKeyPemFile,
        }),
      );
      const { stdout } = await promisify(execFile)(
        resolveRestateBinary(),
        ["--config-file", configPath, "--dump-config"],
        {
          env: { PATH: process.env["PATH"] ?? "" },
          maxBuffer: 4 * 1024 * 1024,
        },
      );
      const section = (name: string): string => {
        const start = stdout.indexOf(`\n[${name}]\n`);
        expect(start, `section [${name}]`).toBeGreaterThan(-1);
        const rest = stdout.slice(start + name.length + 4);
        const end = rest.indexOf("\n[");
        return end === -1 ? rest : rest.slice(0, end);
      };
      const top = stdout.slice(0, stdout.indexOf("\n["));
      expect(top).toContain('node-name = "roost"');
      expect(top).toContain('listen-mode = "tcp"');
      expect(top).toContain('bind-address = "127.0.0.1:15123"');
      expect(top).toContain("default-num-partitions = 8");
      expect(top).toContain("disable-telemetry = true");
      expect(top).toContain('rocksdb-total-memory-size = "512.0 MiB"');
      expect(section("default-retry-policy")).toContain('initial-interval = "100ms"');
      expect(section("default-retry-policy")).toContain('max-interval = "2s"');
      expect(section("default-retry-policy")).toContain(`max-attempts = ${retryForeverAttempts}`);
      expect(section("default-retry-policy")).toContain('on-max-attempts = "pause"');
      expect(section("worker.invoker")).toContain('inactivity-timeout = "5m"');
      expect(section("worker.invoker")).toContain('abort-timeout = "30m"');
      expect(section("worker.invoker")).toContain(
        `request-identity-private-key-pem-file = "${identity.privateKeyPemFile}"`,
      );
      expect(section("admin")).toContain('bind-address = "127.0.0.1:19071"');
      expect(section("ingress")).toContain('bind-address = "127.0.0.1:18081"');
    } finally {
      await dir.remove();
    }
  });

  test("paths are quoted for TOML", () => {
    const text = renderRestateConfig({
      ...restateConfigDefaults,
      baseDir: 'C:\\data "x"',
      ingressPort: 1,
      adminPort: 2,
      nodePort: 3,
    });
    expect(text).toContain('base-dir = "C:\\\\data \\"x\\""');
  });

  test("non-integer settings are refused", () => {
    expect(() =>
      renderRestateConfig({
        ...restateConfigDefaults,
        baseDir: "/x",
        ingressPort: 1,
        adminPort: 2,
        nodePort: 3,
        partitions: 0,
      }),
    ).toThrow(/partitions must be a positive integer/);
  });
});

describe("supervisor lifecycle", () => {
  const run = (inputs: SupervisorInput[], from: SupervisorState = "starting"): SupervisorState =>
    inputs.reduce(nextSupervisorState, from);

  test("start, crash, back off, restart", () => {
    expect(run(["healthy"])).toBe("running");
    expect(run(["healthy", "child-exited"])).toBe("backing-off");
    expect(run(["healthy", "child-exited", "backoff-elapsed"])).toBe("starting");
    expect(run(["healthy", "child-exited", "backoff-elapsed", "start-failed"])).toBe("backing-off");
  });

  test("close wins from every state and ends in closed", () => {
    for (const state of ["starting", "running", "backing-off", "closing"] as const) {
      expect(run(["close"], state)).toBe("closing");
      expect(run(["close", "healthy", "child-exited", "stopped"], state)).toBe("closed");
    }
    expect(run(["close", "backoff-elapsed"], "closed")).toBe("closed");
  });
});

describe("orphan recognition", () => {
  test("only a restate-server with exactly our config file counts", () => {
    const config = "/data/restate/restate.toml";
    expect(
      isOurRestateServer(["/x/bin/restate-server", "--config-file", config, "--no-logo"], config),
    ).toBe(true);
    expect(isOurRestateServer(["/x/bin/restate-server", `--config-file=${config}`], config)).toBe(
      true,
    );
    expect(
      isOurRestateServer(["/x/bin/restate-server", "--config-file", "/other/restate.toml"], config),
    ).toBe(false);
    expect(isOurRestateServer(["/usr/bin/vim", "--config-file", config], config)).toBe(false);
    expect(isOurRestateServer([], config)).toBe(false);
  });
});
