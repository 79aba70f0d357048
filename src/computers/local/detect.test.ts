/** Host detection (../detect.ts): the real host, and hosts that lack things (scripted probes). */
import { describe, expect, test } from "vitest";
import {
  chooseComputerProvider,
  detectHost,
  processProviderHint,
  type HostReport,
} from "../detect.ts";
import type { CommandResult } from "./system.ts";

const ok: CommandResult = { exitCode: 0, signal: null, stdout: "", stderr: "" };

describe("detectHost", () => {
  test("reports this host consistently", async () => {
    const report = await detectHost();
    expect(report.platform).toBe(process.platform);
    expect(report.root).toBe(process.getuid?.() === 0);
    expect(report.localAvailable).toBe(report.missing.length === 0);
    if (!report.root) expect(report.missing.join(" ")).toMatch(/root/);
    if (report.localAvailable) {
      expect(report.sandbox.ok && report.namespaces.ok).toBe(true);
      expect(report.message).toMatch(/can isolate/);
    } else {
      expect(report.message).toContain("ROOST_COMPUTER_PROVIDER=process");
    }
  });

  test("a bare host: names each missing piece and how to allow the process provider", async () => {
    const report = await detectHost({
      platform: "linux",
      getuid: () => 1000,
      findTool: async () => undefined,
      run: async () => ok,
      discoverCgroups: async () => ({
        hierarchies: [],
        controllers: { memory: undefined, pids: undefined, cpu: undefined, freezer: undefined },
      }),
    });
    expect(report.localAvailable).toBe(false);
    expect(report.message).toContain("root");
    expect(report.message).toContain("bwrap");
    expect(report.message).toContain("apt-get install bubblewrap util-linux socat e2fsprogs mount");
    expect(report.message).toContain("mkfs.ext4");
    expect(report.message).toContain("memory and pids");
    expect(report.message).toContain(processProviderHint);
    expect(report.sandbox.detail).toMatch(/not tried/);
  });

  test("a probe that fails is reported with its error", async () => {
    const report = await detectHost({
      platform: "linux",
      getuid: () => 0,
      findTool: async (name) => `/usr/bin/${name}`,
      run: async (file) =>
        file.endsWith("/bwrap")
          ? {
              exitCode: 1,
              signal: null,
              stdout: "",
              stderr: "bwrap: No permissions to create new namespace\n",
            }
          : ok,
      discoverCgroups: async () => ({
        hierarchies: [],
        controllers: { memory: 1, pids: 1, cpu: undefined, freezer: 1 },
      }),
    });
    expect(report.sandbox.ok).toBe(false);
    expect(report.missing).toEqual([
      "working bubblewrap: bwrap: No permissions to create new namespace",
    ]);
    expect(report.localAvailable).toBe(false);
  });

  test("a host without nftables and iproute2 can isolate computers: neither is needed", async () => {
    const report = await detectHost({
      platform: "linux",
      getuid: () => 0,
      findTool: async (name) => (name === "nft" || name === "ip" ? undefined : `/usr/bin/${name}`),
      run: async () => ok,
      discoverCgroups: async () => ({
        hierarchies: [],
        controllers: { memory: 2, pids: 2, cpu: 2, freezer: 2 },
      }),
    });
    expect(report.missing).toEqual([]);
    expect(report.localAvailable).toBe(true);
    expect(Object.keys(report.tools)).not.toContain("nft");
    expect(Object.keys(report.tools)).not.toContain("ip");
    expect(Object.keys(report.tools)).toEqual(
      expect.arrayContaining(["bwrap", "nsenter", "setpriv", "socat"]),
    );
  });

  test("not Linux: only the process provider can run", async () => {
    const report = await detectHost({ platform: "darwin", getuid: () => 501 });
    expect(report.missing).toEqual(["Linux (this is darwin)"]);
    expect(chooseComputerProvider("process", report).kind).toBe("process");
  });
});

describe("chooseComputerProvider", () => {
  const able = { localAvailable: true, message: "can isolate" } as HostReport;
  const unable = {
    localAvailable: false,
    message: `cannot isolate. ${processProviderHint}`,
  } as HostReport;

  test("local by default where the host allows it", () => {
    expect(chooseComputerProvider(undefined, able)).toEqual({ kind: "local" });
    expect(chooseComputerProvider("auto", able)).toEqual({ kind: "local" });
    expect(chooseComputerProvider("local", able)).toEqual({ kind: "local" });
  });

  test("stops with the report's message where it does not", () => {
    expect(() => chooseComputerProvider(undefined, unable)).toThrow(
      /ROOST_COMPUTER_PROVIDER=process/,
    );
    expect(() => chooseComputerProvider("local", unable)).toThrow(/cannot isolate/);
  });

  test("process only by name, with a loud warning", () => {
    const choice = chooseComputerProvider("process", unable);
    expect(choice.kind).toBe("process");
    expect(choice.warning).toMatch(/NOT isolated/);
    expect(() => chooseComputerProvider("docker", able)).toThrow(/must be "local" or "process"/);
  });
});
