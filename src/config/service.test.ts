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

describe("listener ports", () => {
  it("refuses two listeners on one port, naming both settings; 0 (pick a free one) never clashes", () => {
    expect(() => resolveConfig({}, { ROOST_PORT: "7790" })).toThrow(
      /ROOST_PORT and ROOST_SERVICE_PORT are both 7790/,
    );
    expect(() => resolveConfig({ "restate-admin-port": "7780" }, {})).toThrow(
      /ROOST_RESTATE_INGRESS_PORT and ROOST_RESTATE_ADMIN_PORT are both 7780/,
    );
    expect(resolveConfig({}, { ROOST_PORT: "0", ROOST_SERVICE_PORT: "0" }).port).toBe(0);
    // An external engine's ports are not this node's.
    expect(resolveConfig({}, { ...external, ROOST_PORT: "7780" }).port).toBe(7780);
  });
});
