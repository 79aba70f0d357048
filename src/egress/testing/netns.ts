/**
 * Network namespaces for tests that need real test hosts: a namespace joined to the host by a
 * veth pair, and a free private subnet for it. Needs root and iproute2 (`netnsSkipReason`).
 */
import { spawnSync } from "node:child_process";
import { randomInt } from "node:crypto";
import { networkInterfaces } from "node:os";

function ipAvailable(): boolean {
  return spawnSync("ip", ["-V"], { stdio: "ignore" }).status === 0;
}
const isRoot = process.getuid?.() === 0;
/** Why namespace tests cannot run here, or undefined when they can. */
export const netnsSkipReason = !isRoot
  ? "not running as root"
  : !ipAvailable()
    ? "the `ip` command (iproute2) is missing"
    : undefined;

/** Skip with a printed reason, but never in CI (where the tests must run). */
export function netnsSkip(what: string): string | undefined {
  if (netnsSkipReason !== undefined) {
    if (process.env.CI === "true")
      throw new Error(`${what} namespace tests cannot run in CI: ${netnsSkipReason}`);
    console.log(`skipping ${what} namespace tests: ${netnsSkipReason}`);
  }
  return netnsSkipReason;
}

export function ip(...args: string[]): void {
  const result = spawnSync("ip", args, { encoding: "utf8", timeout: 10_000 });
  if (result.status !== 0) throw new Error(`ip ${args.join(" ")} failed: ${result.stderr}`);
}

export interface Namespace {
  name: string;
  hostInterface: string;
  hostAddress: string;
  innerAddress: string;
}

/** A namespace joined to the host by a veth pair with a /30 between them. No other routes. */
export function createNamespace(
  name: string,
  interfacePrefix: string,
  subnet: string,
  offset: number,
): Namespace {
  const hostAddress = `${subnet}.${offset + 1}`;
  const innerAddress = `${subnet}.${offset + 2}`;
  const hostInterface = `${interfacePrefix}h`;
  ip("netns", "add", name);
  ip(
    "link",
    "add",
    hostInterface,
    "type",
    "veth",
    "peer",
    "name",
    `${interfacePrefix}n`,
    "netns",
    name,
  );
  ip("addr", "add", `${hostAddress}/30`, "dev", hostInterface);
  ip("link", "set", hostInterface, "up");
  ip("-n", name, "addr", "add", `${innerAddress}/30`, "dev", `${interfacePrefix}n`);
  ip("-n", name, "link", "set", `${interfacePrefix}n`, "up");
  ip("-n", name, "link", "set", "lo", "up");
  return { name, hostInterface, hostAddress, innerAddress };
}

export function deleteNamespace(namespace: { name: string; hostInterface: string }): void {
  spawnSync("ip", ["netns", "del", namespace.name], { stdio: "ignore", timeout: 10_000 });
  spawnSync("ip", ["link", "del", namespace.hostInterface], { stdio: "ignore", timeout: 10_000 });
}

/** A /24 under 10.213.0.0/16 that no interface on this machine uses. */
export function freeSubnet(): string {
  const used = new Set(
    Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .map((entry) => entry.address),
  );
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const subnet = `10.213.${randomInt(0, 256)}`;
    if (![...used].some((address) => address.startsWith(`${subnet}.`))) return subnet;
  }
  throw new Error("no free 10.213.x.0/24 subnet for the test namespaces");
}
