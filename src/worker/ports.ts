/**
 * `ports.list`: the TCP ports listening in the worker's own network namespace, read from
 * /proc/net/tcp and /proc/net/tcp6 (the kernel's socket tables; LISTEN is state 0A). Inside a
 * sandbox that is the computer's namespace, which holds only loopback, so these are exactly the
 * servers a preview can reach. Without /proc (not Linux) the call fails with `io_error`.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { ListeningPort, PortsListOutput } from "../protocol/index.ts";
import { ToolFailure } from "./tool-context.ts";

const listenState = "0A";

/** Reads the listening TCP ports; `procNet` is the folder holding `tcp` and `tcp6`. */
export async function listListeningPorts(procNet = "/proc/net"): Promise<PortsListOutput> {
  const found = new Map<string, ListeningPort>();
  let readAny = false;
  for (const [file, family] of [
    ["tcp", 4],
    ["tcp6", 6],
  ] as const) {
    let text: string;
    try {
      text = await readFile(path.join(procNet, file), "utf8");
    } catch (error) {
      // tcp6 is absent where IPv6 is off; only both missing is a failure.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw error;
    }
    readAny = true;
    for (const entry of parseSocketTable(text, family))
      found.set(`${entry.port} ${entry.address}`, entry);
  }
  if (!readAny)
    throw new ToolFailure(
      "io_error",
      `cannot list listening ports: ${procNet}/tcp is not readable (this needs Linux with /proc)`,
    );
  const ports = [...found.values()].sort(
    (a, b) => a.port - b.port || a.address.localeCompare(b.address),
  );
  return { ports };
}

/** The LISTEN entries of one /proc/net/tcp{,6} table. */
export function parseSocketTable(text: string, family: 4 | 6): ListeningPort[] {
  const entries: ListeningPort[] = [];
  for (const line of text.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    if (local === undefined || fields[3] !== listenState) continue;
    const [addressHex, portHex] = local.split(":");
    if (addressHex === undefined || portHex === undefined) continue;
    const port = Number.parseInt(portHex, 16);
    const address = family === 4 ? ipv4(addressHex) : ipv6(addressHex);
    if (!Number.isInteger(port) || port < 1 || port > 65_535 || address === undefined) continue;
    entries.push({ port, address });
  }
  return entries;
}

/** The kernel prints an IPv4 address as one 32-bit word in host byte order (little-endian here). */
function ipv4(hex: string): string | undefined {
  if (!/^[0-9A-Fa-f]{8}$/.test(hex)) return undefined;
  const bytes = Buffer.from(hex, "hex").reverse();
  return [...bytes].join(".");
}

/** An IPv6 address is four such words; an IPv4-mapped one (::ffff:a.b.c.d) is shown as IPv4. */
function ipv6(hex: string): string | undefined {
  if (!/^[0-9A-Fa-f]{32}$/.test(hex)) return undefined;
  const bytes = Buffer.alloc(16);
  for (let word = 0; word < 4; word++)
    Buffer.from(hex.slice(word * 8, word * 8 + 8), "hex")
      .reverse()
      .copy(bytes, word * 4);
  if (bytes.subarray(0, 10).every((byte) => byte === 0) && bytes[10] === 0xff && bytes[11] === 0xff)
    return [...bytes.subarray(12)].join(".");
  const groups: string[] = [];
  for (let index = 0; index < 16; index += 2) groups.push(bytes.readUInt16BE(index).toString(16));
  return compressIpv6(groups);
}

/** RFC 5952: the longest run of two or more zero groups becomes `::`. */
function compressIpv6(groups: string[]): string {
  let bestStart = -1;
  let bestLength = 0;
  for (let start = 0; start < groups.length;) {
    if (groups[start] !== "0") {
      start++;
      continue;
    }
    let end = start;
    while (end < groups.length && groups[end] === "0") end++;
    if (end - start > bestLength && end - start >= 2) {
      bestStart = start;
      bestLength = end - start;
    }
    start = end;
  }
  if (bestStart < 0) return groups.join(":");
  const head = groups.slice(0, bestStart).join(":");
  const tail = groups.slice(bestStart + bestLength).join(":");
  return `${head}::${tail}`;
}
