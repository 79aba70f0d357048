/** ROOST_NODE_ID, ROOST_NODE_SERVICE_URL, ROOST_HOME_TIMEOUT_MS: this node as a computer host (decision 0040). */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../errors/index.ts";
import { resolveConfig } from "./index.ts";

describe("the node's identity as a computer host", () => {
  it("defaults to no configured id (the data dir keeps one), the service URL and 30 s", () => {
    expect(resolveConfig({}, {}).node).toEqual({
      id: undefined,
      serviceUrl: undefined,
      homeTimeoutMs: 30_000,
      computers: "local",
      computerHosts: [],
    });
  });

  it("takes an id, this node's own URL and a timeout", () => {
    const config = resolveConfig(
      {},
      {
        ROOST_NODE_ID: "host-7_b",
        ROOST_NODE_SERVICE_URL: "http://10.0.0.7:7790",
        ROOST_HOME_TIMEOUT_MS: "5000",
      },
    );
    expect(config.node).toEqual({
      id: "host-7_b",
      serviceUrl: "http://10.0.0.7:7790",
      homeTimeoutMs: 5000,
      computers: "local",
      computerHosts: [],
    });
  });

  it("refuses an id that could not name a Restate service or a store value, saying what is allowed", () => {
    for (const id of ["a b", "node/1", "x".repeat(41), "nöde"]) {
      expect(() => resolveConfig({}, { ROOST_NODE_ID: id }), id).toThrow(ConfigError);
    }
    expect(() => resolveConfig({}, { ROOST_NODE_ID: "a b" })).toThrow(
      /ROOST_NODE_ID must be 1–40 letters, digits/,
    );
    expect(() => resolveConfig({}, { ROOST_HOME_TIMEOUT_MS: "10" })).toThrow(ConfigError);
  });

  it("ROOST_COMPUTERS=remote takes the computer hosts' ids; a wrong combination says how to fix it", () => {
    expect(
      resolveConfig({}, { ROOST_COMPUTERS: "remote", ROOST_COMPUTER_HOSTS: "host-1, host-2" }).node,
    ).toMatchObject({ computers: "remote", computerHosts: ["host-1", "host-2"] });
    expect(() => resolveConfig({}, { ROOST_COMPUTERS: "remote" })).toThrow(
      /needs ROOST_COMPUTER_HOSTS/,
    );
    expect(() => resolveConfig({}, { ROOST_COMPUTERS: "elsewhere" })).toThrow(
      /ROOST_COMPUTERS must be "local"/,
    );
    expect(() => resolveConfig({}, { ROOST_COMPUTER_HOSTS: "host-1" })).toThrow(
      /only read with ROOST_COMPUTERS=remote/,
    );
    expect(() =>
      resolveConfig({}, { ROOST_COMPUTERS: "remote", ROOST_COMPUTER_HOSTS: "host-1,../x" }),
    ).toThrow(/ROOST_COMPUTER_HOSTS lists node ids/);
  });
});
