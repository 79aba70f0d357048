/** ROOST_APPROVAL_TIMEOUT_MS: how long a call waits for approval, resolved once at start. */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../errors/index.ts";
import { resolveConfig } from "./index.ts";

describe("ROOST_APPROVAL_TIMEOUT_MS", () => {
  it("defaults to 10 minutes; the variable and the option set it", () => {
    expect(resolveConfig({}, {}).approvalTimeoutMs).toBe(600_000);
    expect(resolveConfig({}, { ROOST_APPROVAL_TIMEOUT_MS: "1500" }).approvalTimeoutMs).toBe(1500);
    expect(resolveConfig({ "approval-timeout-ms": "90000" }, {}).approvalTimeoutMs).toBe(90_000);
  });

  it("refuses values it cannot use, naming the variable and what it accepts", () => {
    for (const value of ["soon", "10", "-1", String(8 * 24 * 3600_000)]) {
      expect(() => resolveConfig({}, { ROOST_APPROVAL_TIMEOUT_MS: value }), value).toThrow(
        ConfigError,
      );
      expect(() => resolveConfig({}, { ROOST_APPROVAL_TIMEOUT_MS: value })).toThrow(
        /ROOST_APPROVAL_TIMEOUT_MS/,
      );
    }
  });
});
