/** ROOST_EGRESS_ALLOW_PRIVATE: parsed once at start (which ranges are private, egress/ judges). */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../errors/index.ts";
import { resolveConfig } from "./index.ts";

describe("ROOST_EGRESS_ALLOW_PRIVATE", () => {
  it("is a comma-separated list of CIDRs, empty by default", () => {
    expect(resolveConfig({}, {}).egress.allowPrivate).toEqual([]);
    expect(
      resolveConfig({}, { ROOST_EGRESS_ALLOW_PRIVATE: " 10.20.0.0/16, fd00:1::/64 ,," }).egress
        .allowPrivate,
    ).toEqual(["10.20.0.0/16", "fd00:1::/64"]);
    expect(
      resolveConfig({ "egress-allow-private": "192.168.5.0/24" }, {}).egress.allowPrivate,
    ).toEqual(["192.168.5.0/24"]);
  });

  it("stops start-up on something that is not a range, saying what it accepts", () => {
    expect(() => resolveConfig({}, { ROOST_EGRESS_ALLOW_PRIVATE: "intranet.example" })).toThrow(
      ConfigError,
    );
    expect(() => resolveConfig({}, { ROOST_EGRESS_ALLOW_PRIVATE: "10.0.0.0/8;x" })).toThrow(
      /comma-separated list of CIDR ranges such as 10\.20\.0\.0\/16/,
    );
  });
});
