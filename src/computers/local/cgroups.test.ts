/** Parsing cgroup mounts and memberships (v1, v2 and mixed hosts). */
import { describe, expect, test } from "vitest";
import { parseCgroupMounts, parseProcCgroup } from "./cgroups.ts";

const mixedMountinfo = [
  "35 25 0:30 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
  "36 35 0:31 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
  "37 35 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
  "38 35 0:33 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids",
  "39 35 0:34 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
  "40 25 0:35 / /proc rw - proc proc rw",
].join("\n");

describe("cgroup parsing", () => {
  test("mountinfo: v1 controllers and the v2 hierarchy", () => {
    const mounts = parseCgroupMounts(mixedMountinfo);
    expect(mounts.map((mount) => [mount.version, mount.mountPoint])).toEqual([
      [1, "/sys/fs/cgroup/cpu"],
      [1, "/sys/fs/cgroup/memory"],
      [1, "/sys/fs/cgroup/pids"],
      [2, "/sys/fs/cgroup/unified"],
    ]);
    expect(mounts[0]!.options).toContain("cpu");
  });

  test("mountinfo: a container's mount root and escaped spaces", () => {
    const [mount] = parseCgroupMounts(
      "50 40 0:40 /docker/abc /sys/fs/cgroup\\040x rw - cgroup2 cgroup2 rw",
    );
    expect(mount).toMatchObject({
      version: 2,
      root: "/docker/abc",
      mountPoint: "/sys/fs/cgroup x",
    });
  });

  test("/proc/self/cgroup: v1 controller lists and the v2 path", () => {
    const paths = parseProcCgroup("4:memory:/process_api/x\n2:cpu,cpuacct:/\n0::/user.slice\n");
    expect(paths.get("memory")).toBe("/process_api/x");
    expect(paths.get("cpuacct")).toBe("/");
    expect(paths.get("")).toBe("/user.slice");
  });
});
