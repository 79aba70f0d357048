/** ROOST_SERVICE_HOST and ROOST_RESTATE_IDENTITY_KEYS: where the loop's service endpoint listens, and who may call it. */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../errors/index.ts";
import { resolveConfig } from "./index.ts";

const external = {
  ROOST_RESTATE_INGRESS_URL: "http://restate.internal:8080",
  ROOST_RESTATE_ADMIN_URL: "http://restate.internal:9070",
};
const key = "publickeyv1_BRypcSwxeuEqotRJQZACH2AVtQ77ttGgbJYzUzSVADwn";

describe("the service endpoint's address and request identity", () => {
  it("listens on 127.0.0.1 by default; an external Restate's keys default to none", () => {
    expect(resolveConfig({}, {}).serviceHost).toBe("127.0.0.1");
    expect(resolveConfig({}, external).restate).toMatchObject({ identityKeys: [] });
  });

  it("binds any address with the external Restate's keys, given comma-separated", () => {
    const config = resolveConfig(
      { "service-host": "0.0.0.0" },
      { ...external, ROOST_RESTATE_IDENTITY_KEYS: ` ${key}, ${key.replace("B", "C")} ` },
    );
    expect(config.serviceHost).toBe("0.0.0.0");
    expect(config.restate).toMatchObject({ identityKeys: [key, key.replace("B", "C")] });
  });

  it("refuses a non-loopback bind without keys, saying which setting fixes it", () => {
    expect(() => resolveConfig({}, { ...external, ROOST_SERVICE_HOST: "10.0.0.5" })).toThrow(
      ConfigError,
    );
    expect(() => resolveConfig({}, { ...external, ROOST_SERVICE_HOST: "10.0.0.5" })).toThrow(
      /set ROOST_RESTATE_IDENTITY_KEYS/,
    );
    expect(resolveConfig({}, { ...external, ROOST_SERVICE_HOST: "127.0.0.2" }).serviceHost).toBe(
      "127.0.0.2",
    );
  });

  it("the embedded engine may bind anywhere: it always signs (RI1)", () => {
    expect(resolveConfig({}, { ROOST_SERVICE_HOST: "0.0.0.0" }).serviceHost).toBe("0.0.0.0");
  });

  it("refuses a key that is not Restate's public key format", () => {
    expect(() =>
      resolveConfig({}, { ...external, ROOST_RESTATE_IDENTITY_KEYS: "ssh-ed25519 AAAA" }),
    ).toThrow(/not a Restate request identity public key/);
  });
});
