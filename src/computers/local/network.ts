/**
 * A computer's network: its own network namespace `roost-N` joined to the host by a veth pair
 * (host side `rv-N`, inside `eth0`), one /30 from the address pool, no default route and no DNS.
 * The only things a computer can reach are the ports the host forwards on the host side of its
 * veth (the gateway and the egress proxy); nftables rules in the Roost-owned table `inet roost`
 * do the forwarding and refuse everything else.
 *
 * Invariants:
 *   N1 input from any `rv-*` interface is accepted only for connections the computer's own
 *      `nat-cN` chain forwarded (its host-side address, the listed ports); everything else is
 *      rejected, so a host service bound to 0.0.0.0 does not answer a computer.
 *   N2 nothing is routed through the host to or from a veth (forward chain drops `rv-*`), so
 *      computers cannot reach each other or the outside except through the forwarded ports.
 *   N3 each forward keeps the computer's source address (DNAT only), so the egress proxy can
 *      tell computers apart by source IP.
 *   N4 set-up and tear-down are idempotent, and the nft changes of one slot are one atomic
 *      transaction; the base table is rewritten atomically and identically by every server.
 */
import { access, readdir, writeFile } from "node:fs/promises";
import { isIPv4 } from "node:net";
import { HostCommandError, isErrno, runChecked, runCommand } from "./system.ts";
import type { SlotAddresses } from "./slots.ts";

export const nftTable = "roost";
export const hostInterfacePrefix = "rv-";
export const netnsPrefix = "roost-";

export interface SlotNetwork extends SlotAddresses {
  slot: number;
  /** Network namespace name (`ip netns`). */
  netns: string;
  /** Host side of the veth pair. */
  hostInterface: string;
}

export function slotNetwork(slot: number, addresses: SlotAddresses): SlotNetwork {
  return {
    ...addresses,
    slot,
    netns: `${netnsPrefix}${slot}`,
    hostInterface: `${hostInterfacePrefix}${slot}`,
  };
}

/** A port the computer reaches at its host-side address, delivered to `targetAddress:port` on the host. */
export interface PortForward {
  port: number;
  /** A local IPv4 address of the host (127.0.0.1 when the listener is on loopback or 0.0.0.0). */
  targetAddress: string;
}

export interface NetworkTools {
  ip: string;
  nft: string;
}

/** N1, N2, N4: the base table; safe to run at every start, by any number of servers. */
export async function ensureFirewall(tools: NetworkTools): Promise<void> {
  await runChecked(tools.nft, ["-f", "-"], { input: firewallScript() });
}

/**
 * The base table as an nft script. It is also part of every slot's set-up transaction, so a
 * computer never comes up behind a table someone flushed or deleted by hand.
 */
function firewallScript(): string {
  const rv = `"${hostInterfacePrefix}*"`;
  const lines = [
    `add table inet ${nftTable}`,
    `add map inet ${nftTable} in_slots { type ifname : verdict; }`,
    `add map inet ${nftTable} nat_slots { type ifname : verdict; }`,
    `add chain inet ${nftTable} input { type filter hook input priority filter - 10; policy accept; }`,
    `add chain inet ${nftTable} forward { type filter hook forward priority filter - 10; policy accept; }`,
    `add chain inet ${nftTable} prerouting { type nat hook prerouting priority dstnat - 10; policy accept; }`,
    `flush chain inet ${nftTable} input`,
    `flush chain inet ${nftTable} forward`,
    `flush chain inet ${nftTable} prerouting`,
    `add rule inet ${nftTable} prerouting iifname ${rv} iifname vmap @nat_slots`,
    `add rule inet ${nftTable} input iifname ${rv} iifname vmap @in_slots`,
    `add rule inet ${nftTable} input iifname ${rv} meta l4proto tcp reject with tcp reset`,
    `add rule inet ${nftTable} input iifname ${rv} reject with icmpx type admin-prohibited`,
    `add rule inet ${nftTable} forward iifname ${rv} drop`,
    `add rule inet ${nftTable} forward oifname ${rv} drop`,
  ];
  return `${lines.join("\n")}\n`;
}

function slotChains(slot: number): { input: string; nat: string } {
  return { input: `in-c${slot}`, nat: `nat-c${slot}` };
}

function slotRulesScript(network: SlotNetwork, forwards: readonly PortForward[]): string {
  const { input, nat } = slotChains(network.slot);
  const ports = [...new Set(forwards.map((forward) => forward.port))].join(", ");
  const lines = [
    firewallScript(),
    `add chain inet ${nftTable} ${input}`,
    `flush chain inet ${nftTable} ${input}`,
    `add chain inet ${nftTable} ${nat}`,
    `flush chain inet ${nftTable} ${nat}`,
  ];
  for (const forward of forwards) {
    // N3: DNAT only; the source address stays the computer's.
    lines.push(
      `add rule inet ${nftTable} ${nat} ip daddr ${network.hostAddress} tcp dport ${forward.port} dnat ip to ${forward.targetAddress}`,
    );
  }
  if (forwards.length > 0) {
    // N1: only what this slot's own nat chain forwarded (ports are unchanged by the DNAT).
    lines.push(
      `add rule inet ${nftTable} ${input} meta l4proto tcp ct status dnat ct original ip daddr ${network.hostAddress} tcp dport { ${ports} } accept`,
    );
  }
  lines.push(
    `add element inet ${nftTable} in_slots { "${network.hostInterface}" : jump ${input} }`,
    `add element inet ${nftTable} nat_slots { "${network.hostInterface}" : jump ${nat} }`,
  );
  return `${lines.join("\n")}\n`;
}

/** Removes a slot's chains and map entries; the leading adds make it succeed when they are absent (N4). */
function slotRemovalScript(slot: number): string {
  const { input, nat } = slotChains(slot);
  const name = `"${hostInterfacePrefix}${slot}"`;
  return `${[
    `add chain inet ${nftTable} ${input}`,
    `add chain inet ${nftTable} ${nat}`,
    `add element inet ${nftTable} in_slots { ${name} : jump ${input} }`,
    `add element inet ${nftTable} nat_slots { ${name} : jump ${nat} }`,
    `delete element inet ${nftTable} in_slots { ${name} }`,
    `delete element inet ${nftTable} nat_slots { ${name} }`,
    `flush chain inet ${nftTable} ${input}`,
    `flush chain inet ${nftTable} ${nat}`,
    `delete chain inet ${nftTable} ${input}`,
    `delete chain inet ${nftTable} ${nat}`,
  ].join("\n")}\n`;
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

async function writeSysctl(file: string, value: string): Promise<void> {
  await writeFile(file, value).catch((error: unknown) => {
    if (!isErrno(error, "ENOENT")) throw error;
  });
}

/** Brings up the slot's namespace, veth pair, addresses and forwarding rules. */
export async function setUpNetwork(
  tools: NetworkTools,
  network: SlotNetwork,
  forwards: readonly PortForward[],
): Promise<void> {
  for (const forward of forwards) {
    if (
      !isIPv4(forward.targetAddress) ||
      !Number.isInteger(forward.port) ||
      forward.port <= 0 ||
      forward.port > 65_535
    ) {
      throw new Error(
        `cannot forward to ${forward.targetAddress}:${forward.port} (an IPv4 address and a TCP port are needed)`,
      );
    }
  }
  if (
    (await exists(`/run/netns/${network.netns}`)) ||
    (await exists(`/sys/class/net/${network.hostInterface}`))
  ) {
    await tearDownNetwork(tools, network.slot); // N4: a half-made earlier attempt
  }
  await runChecked(tools.ip, ["-batch", "-"], {
    input: [
      `netns add ${network.netns}`,
      `link add ${network.hostInterface} type veth peer name eth0 netns ${network.netns}`,
      `addr add ${network.hostAddress}/${network.prefixLength} dev ${network.hostInterface}`,
      `link set ${network.hostInterface} up`,
      "",
    ].join("\n"),
  });
  const sysctl = `/proc/sys/net`;
  await Promise.all([
    // Forwards to loopback listeners need loopback addresses routable on this interface.
    forwards.some((forward) => forward.targetAddress.startsWith("127."))
      ? writeSysctl(`${sysctl}/ipv4/conf/${network.hostInterface}/route_localnet`, "1")
      : Promise.resolve(),
    writeSysctl(`${sysctl}/ipv6/conf/${network.hostInterface}/disable_ipv6`, "1"),
    runChecked(tools.ip, ["-n", network.netns, "-batch", "-"], {
      input: [
        `addr add ${network.computerAddress}/${network.prefixLength} dev eth0`,
        "link set eth0 up",
        "link set lo up",
        "",
      ].join("\n"),
    }),
    runChecked(tools.nft, ["-f", "-"], { input: slotRulesScript(network, forwards) }),
  ]);
}

/** Removes the slot's namespace, veth pair and rules. Idempotent (N4). */
export async function tearDownNetwork(tools: NetworkTools, slot: number): Promise<void> {
  const hostInterface = `${hostInterfacePrefix}${slot}`;
  const netns = `${netnsPrefix}${slot}`;
  const ignoreAbsent = (pattern: RegExp) => (error: unknown) => {
    if (error instanceof HostCommandError && pattern.test(error.result.stderr)) return;
    throw error;
  };
  await Promise.all([
    // Deleting the host side deletes the pair at once (a namespace's veth otherwise lingers).
    runChecked(tools.ip, ["link", "del", hostInterface]).catch(
      ignoreAbsent(/Cannot find device|does not exist/),
    ),
    runChecked(tools.nft, ["-f", "-"], { input: slotRemovalScript(slot) }).catch(
      ignoreAbsent(/No such file or directory/),
    ),
  ]);
  await runChecked(tools.ip, ["netns", "del", netns]).catch(
    ignoreAbsent(/No such file or directory|Invalid argument/),
  );
}

/** Slots with any network resource left on the host: namespaces, veths, nft chains (for the start-up sweep). */
export async function listNetworkSlots(tools: NetworkTools): Promise<Set<number>> {
  const slots = new Set<number>();
  const collect = (names: Iterable<string>, pattern: RegExp) => {
    for (const name of names) {
      const match = pattern.exec(name);
      if (match !== null) slots.add(Number(match[1]));
    }
  };
  collect(await readdir("/run/netns").catch(() => []), new RegExp(`^${netnsPrefix}(\\d+)$`));
  collect(
    await readdir("/sys/class/net").catch(() => []),
    new RegExp(`^${hostInterfacePrefix}(\\d+)$`),
  );
  const listing = await runCommand(tools.nft, ["-j", "list", "table", "inet", nftTable]);
  if (listing.exitCode === 0) {
    const parsed = JSON.parse(listing.stdout) as {
      nftables?: Array<{ chain?: { name?: string } }>;
    };
    collect(
      (parsed.nftables ?? []).flatMap((entry) =>
        entry.chain?.name === undefined ? [] : [entry.chain.name],
      ),
      /^(?:in|nat)-c(\d+)$/,
    );
  }
  return slots;
}
