import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listListeningPorts, parseSocketTable } from "./ports.ts";

// Lines as the kernel prints them (trailing fields shortened).
const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0
   2: 0100007F:1F40 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000  1000        0 3 1 0 20 4 30 10 -1
`;
const tcp6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4 1 0 100 0 0 10 0
   1: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5 1 0 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:2328 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 6 1 0 100 0 0 10 0
`;

describe("listening ports from /proc/net/tcp{,6}", () => {
  it("reads LISTEN sockets only, with their addresses, from both tables", async () => {
    expect(parseSocketTable(tcp, 4)).toEqual([
      { port: 8000, address: "127.0.0.1" },
      { port: 22, address: "0.0.0.0" },
    ]);
    expect(parseSocketTable(tcp6, 6)).toEqual([
      { port: 3000, address: "::1" },
      { port: 8080, address: "::" },
      { port: 9000, address: "127.0.0.1" },
    ]);
    const dir = mkdtempSync(join(tmpdir(), "roost-ports-"));
    try {
      writeFileSync(join(dir, "tcp"), tcp);
      writeFileSync(join(dir, "tcp6"), tcp6);
      expect((await listListeningPorts(dir)).ports.map((entry) => entry.port)).toEqual([
        22, 3000, 8000, 8080, 9000,
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a server listening in this namespace is listed while it listens, and not after it closed", async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      expect((await listListeningPorts()).ports).toContainEqual({ port, address: "127.0.0.1" });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    expect((await listListeningPorts()).ports.some((entry) => entry.port === port)).toBe(false);
  });

  it("without the tables it fails with io_error and says why", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-ports-"));
    try {
      await expect(listListeningPorts(dir)).rejects.toMatchObject({
        code: "io_error",
        message: expect.stringMatching(/needs Linux with \/proc/),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
