/** ROOST_NODE_*: this node's internal endpoint for node-to-node forwarding (decision 0039). */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../errors/index.ts";
import { resolveConfig } from "./index.ts";

const secret = "s".repeat(32);

describe("the node-to-node endpoint", () => {
  it("is off without ROOST_NODE_URL", () => {
    expect(resolveConfig({}, {}).forwarding).toBeUndefined();
  });

  it("takes the URL, the secret, and defaults to 127.0.0.1:7792", () => {
    expect(
      resolveConfig({}, { ROOST_NODE_URL: "http://10.0.0.5:7792/", ROOST_NODE_SECRET: secret })
        .forwarding,
    ).toEqual({ url: "http://10.0.0.5:7792", host: "127.0.0.1", port: 7792, secret });
    expect(
      resolveConfig(
        {},
        {
          ROOST_NODE_URL: "http://10.0.0.5:9000",
          ROOST_NODE_SECRET: secret,
          ROOST_NODE_HOST: "10.0.0.5",
          ROOST_NODE_PORT: "9000",
        },
      ).forwarding,
    ).toMatchObject({ host: "10.0.0.5", port: 9000 });
  });

  it("refuses a URL without a secret, or with a short one, saying how to make one", () => {
    for (const env of [
      { ROOST_NODE_URL: "http://10.0.0.5:7792" },
      { ROOST_NODE_URL: "http://10.0.0.5:7792", ROOST_NODE_SECRET: "short" },
    ]) {
      expect(() => resolveConfig({}, env)).toThrow(ConfigError);
      expect(() => resolveConfig({}, env)).toThrow(/at least 32 characters.*openssl rand/);
    }
    expect(() =>
      resolveConfig({}, { ROOST_NODE_URL: "ftp://x", ROOST_NODE_SECRET: secret }),
    ).toThrow(/ROOST_NODE_URL.*http\(s\) URL/);
  });
});
