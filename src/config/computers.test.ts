/** The host settings of computers: ROOST_INSTALL_SYSTEM_PACKAGES, ROOST_TOOLS_PATH and ROOST_SCREENS_MAX. */
import { describe, expect, test } from "vitest";
import { resolveConfig } from "./index.ts";

describe("ROOST_INSTALL_SYSTEM_PACKAGES", () => {
  test("on unless turned off, by the environment or the flag", () => {
    expect(resolveConfig({}, {}).computers.installSystemPackages).toBe(true);
    for (const off of ["0", "false", "no", "off", "OFF"])
      expect(
        resolveConfig({}, { ROOST_INSTALL_SYSTEM_PACKAGES: off }).computers.installSystemPackages,
      ).toBe(false);
    expect(
      resolveConfig({ "install-system-packages": "0" }, { ROOST_INSTALL_SYSTEM_PACKAGES: "1" })
        .computers.installSystemPackages,
    ).toBe(false);
  });

  test("a value that is not a yes or a no is refused with what to write", () => {
    expect(() => resolveConfig({}, { ROOST_INSTALL_SYSTEM_PACKAGES: "never" })).toThrow(
      /ROOST_INSTALL_SYSTEM_PACKAGES \(--install-system-packages\) must be 1 or 0/,
    );
  });
});

describe("ROOST_TOOLS_PATH", () => {
  test("absent by default (the usual folders); absolute folders otherwise", () => {
    expect(resolveConfig({}, {}).computers.toolsPath).toBeUndefined();
    expect(
      resolveConfig({}, { ROOST_TOOLS_PATH: "/opt/tools/bin:/usr/bin" }).computers.toolsPath,
    ).toBe("/opt/tools/bin:/usr/bin");
  });

  test("a relative folder is refused: it would depend on where Roost was started", () => {
    expect(() => resolveConfig({}, { ROOST_TOOLS_PATH: "bin:/usr/bin" })).toThrow(
      /colon-separated list of absolute folders/,
    );
  });
});

describe("ROOST_SCREENS_MAX", () => {
  test("4 by default; the environment or the flag sets it; out of 1 to 32 is refused", () => {
    expect(resolveConfig({}, {}).computers.screensMax).toBe(4);
    expect(resolveConfig({}, { ROOST_SCREENS_MAX: "2" }).computers.screensMax).toBe(2);
    expect(
      resolveConfig({ "screens-max": "8" }, { ROOST_SCREENS_MAX: "2" }).computers.screensMax,
    ).toBe(8);
    for (const bad of ["0", "33", "many"])
      expect(() => resolveConfig({}, { ROOST_SCREENS_MAX: bad }), bad).toThrow(/ROOST_SCREENS_MAX/);
  });
});
