import { describe, expect, it } from "vitest";
import { resolveWorkerConfig } from "./config.ts";

const env = {
  ROOST_GATEWAY_URL: "ws://127.0.0.1:8080/v1/gateway",
  ROOST_WORKER_TOKEN: "secret",
  ROOST_WORKER_STATE_DIR: "/var/lib/roost-worker",
};

describe("resolveWorkerConfig", () => {
  it("reads the environment and defaults the workspace to /workspace", () => {
    expect(resolveWorkerConfig([], env)).toEqual({
      gatewayUrl: "ws://127.0.0.1:8080/v1/gateway",
      token: "secret",
      tokenFile: undefined,
      stateDir: "/var/lib/roost-worker",
      workspace: "/workspace",
      jobPrelude: undefined,
    });
  });

  it("reads ROOST_SCREENS_MAX, and refuses one that is not a whole number from 1 to 32", () => {
    expect(resolveWorkerConfig([], { ...env, ROOST_SCREENS_MAX: "2" }).screensMax).toBe(2);
    for (const bad of ["0", "33", "two", "1.5"])
      expect(() => resolveWorkerConfig([], { ...env, ROOST_SCREENS_MAX: bad }), bad).toThrow(
        /ROOST_SCREENS_MAX must be a whole number from 1 to 32/,
      );
  });

  it("reads ROOST_WARM_SHELL (on by default), and refuses anything but on or off", () => {
    expect(resolveWorkerConfig([], env).warmShell).toBeUndefined();
    expect(resolveWorkerConfig([], { ...env, ROOST_WARM_SHELL: "off" }).warmShell).toBe(false);
    expect(resolveWorkerConfig([], { ...env, ROOST_WARM_SHELL: "on" }).warmShell).toBe(true);
    expect(() => resolveWorkerConfig([], { ...env, ROOST_WARM_SHELL: "no" })).toThrow(
      /ROOST_WARM_SHELL must be on or off \(got "no"\)/,
    );
  });

  it("lets flags override the environment", () => {
    const config = resolveWorkerConfig(
      [
        "--token",
        "flag-token",
        "--workspace",
        "/w",
        "--gateway-url",
        "wss://roost.example/v1/gateway",
      ],
      env,
    );
    expect(config).toMatchObject({
      token: "flag-token",
      workspace: "/w",
      gatewayUrl: "wss://roost.example/v1/gateway",
    });
  });

  it("says how to pass a missing token", () => {
    expect(() => resolveWorkerConfig([], { ...env, ROOST_WORKER_TOKEN: undefined })).toThrow(
      "worker: token is required (pass --token or set ROOST_WORKER_TOKEN",
    );
  });

  it("accepts a token file instead of a token", () => {
    const config = resolveWorkerConfig(["--token-file", "/run/token"], {
      ...env,
      ROOST_WORKER_TOKEN: "",
    });
    expect(config).toMatchObject({ token: undefined, tokenFile: "/run/token" });
  });

  it("says how to pass a missing gateway URL and state directory", () => {
    expect(() => resolveWorkerConfig([], { ...env, ROOST_GATEWAY_URL: undefined })).toThrow(
      "worker: gateway URL is required (pass --gateway-url or set ROOST_GATEWAY_URL)",
    );
    expect(() => resolveWorkerConfig([], { ...env, ROOST_WORKER_STATE_DIR: undefined })).toThrow(
      /--state-dir or set ROOST_WORKER_STATE_DIR/,
    );
  });

  it("refuses a URL that is not ws://, wss:// or ws+unix://", () => {
    expect(() => resolveWorkerConfig(["--gateway-url", "http://x/v1/gateway"], env)).toThrow(
      /must start with ws:\/\/, wss:\/\/ or ws\+unix:\/\//,
    );
  });

  it("accepts a unix socket as ws+unix://PATH:/v1/gateway (a local computer's gateway socket)", () => {
    const url = "ws+unix:///run/roost/gateway.sock:/v1/gateway";
    expect(resolveWorkerConfig(["--gateway-url", url], env).gatewayUrl).toBe(url);
  });

  it("refuses unknown flags with the usage", () => {
    expect(() => resolveWorkerConfig(["--tokn", "x"], env)).toThrow(
      /usage: node src\/worker\/main.ts/,
    );
  });
});
