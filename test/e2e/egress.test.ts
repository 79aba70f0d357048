/**
 * A computer's way out, end to end: a bot's command reaches an outside host only through the
 * egress proxy and only as the computer's network policy allows; a changed policy reaches the
 * running computer at once; a direct connection that bypasses the proxy fails; refusals land in
 * the audit log. The outside host lives in a network namespace this test creates.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";

const isRoot = process.getuid?.() === 0;
if (!isRoot && process.env.CI === "true")
  throw new Error("the egress end-to-end test needs root in CI");

/** An HTTP server in its own namespace, reachable from the host over a veth (198.18.0.0/15, RFC 2544). */
function startOutsideHttpHost() {
  const tag = randomBytes(3).toString("hex");
  const netns = `roostegr-${tag}`;
  const hostSide = `rte-${tag}`;
  const block = (randomBytes(2).readUInt16BE(0) % 16_384) * 4;
  const prefix = `198.19.${Math.floor(block / 256)}`;
  const address = `${prefix}.${(block % 256) + 2}`;
  const ip = (...args: string[]) => {
    const result = spawnSync("ip", args, { encoding: "utf8" });
    if (result.status !== 0) throw new Error(`ip ${args.join(" ")}: ${result.stderr}`);
  };
  ip("netns", "add", netns);
  ip("link", "add", hostSide, "type", "veth", "peer", "name", "eth0", "netns", netns);
  ip("addr", "add", `${prefix}.${(block % 256) + 1}/30`, "dev", hostSide);
  ip("link", "set", hostSide, "up");
  ip("-n", netns, "addr", "add", `${address}/30`, "dev", "eth0");
  ip("-n", netns, "link", "set", "eth0", "up");
  const source = `require("node:http").createServer((q, s) => s.end("hello from outside\\n")).listen(8080, "0.0.0.0", () => console.log("ready"));`;
  const server: ChildProcess = spawn(
    "ip",
    ["netns", "exec", netns, process.execPath, "-e", source],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  return {
    address,
    ready: new Promise<void>((resolve) => server.stdout!.once("data", () => resolve())),
    close() {
      server.kill("SIGKILL");
      spawnSync("ip", ["link", "del", hostSide]);
      spawnSync("ip", ["netns", "del", netns]);
    },
  };
}

describe.skipIf(!isRoot)("egress end to end (local provider; skipped when not root)", () => {
  let dataDir: string;
  let roost: RoostProcess;
  let outside: ReturnType<typeof startOutsideHttpHost>;

  beforeAll(async () => {
    outside = startOutsideHttpHost();
    await outside.ready;
    dataDir = mkdtempSync(join(tmpdir(), "roost-egress-"));
    roost = await createRoostProcess({
      dataDir,
      env: { ROOST_COMPUTER_PROVIDER: "local", ROOST_FOLLOW_UP_WINDOW_MS: "200" },
    });
    await roost.start();
  });
  afterAll(async () => {
    await roost?.stop();
    outside?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("allows what the policy allows, refuses the rest, applies changes at once, and logs refusals", async () => {
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("netizen");
    const conversation = await api.createConversation(bot.id);
    let replies = 0;
    const shell = async (command: string) => {
      await api.send(conversation.id, `$ ${command}`);
      const steps = await api.waitForSteps(conversation.id, "reply", ++replies, 60_000);
      return String(
        (steps.filter((step) => step.kind === "tool").at(-1)!.payload.details as { stdout: string })
          .stdout,
      );
    };
    const target = `http://${outside.address}:8080/`;
    const viaProxy = `curl -sS -m 5 -o /dev/null -w '%{http_code}' ${target}; echo`;

    // The default policy refuses a special-use address: the proxy answers 403.
    expect((await shell(viaProxy)).trim()).toBe("403");
    const initial = await api.call<{ policy: { mode: string }; enforced: boolean }>(
      "GET",
      "/v1/computers/me/network-policy",
    );
    expect(initial).toMatchObject({ policy: { mode: "defaults-and-allowlist" }, enforced: true });

    // An invalid policy is refused with a reason, and nothing changes.
    await expect(
      api.call("PUT", "/v1/computers/me/network-policy", { policy: { mode: "sometimes" } }),
    ).rejects.toThrow(/400/);

    // Allow exactly that address and port: the running computer gets through at once.
    await api.call("PUT", "/v1/computers/me/network-policy", {
      policy: { mode: "allowlist-only", allow: [`${outside.address}:8080`] },
    });
    expect(await shell(`curl -sS -m 5 ${target}`)).toBe("hello from outside\n");

    // Bypassing the proxy does not work even for an allowed host: there is no route out.
    expect(
      (await shell(`curl -sS -m 3 --noproxy '*' ${target} >/dev/null 2>&1; echo "exit $?"`)).trim(),
    ).not.toBe("exit 0");

    // Taking it away again takes effect at once too.
    await api.call("PUT", "/v1/computers/me/network-policy", { policy: { mode: "none" } });
    expect((await shell(viaProxy)).trim()).toBe("403");

    const database = new DatabaseSync(join(dataDir, "roost.db"), { readOnly: true });
    try {
      const rows = database
        .prepare(
          "SELECT action FROM audit_log WHERE action LIKE 'egress.%' OR action = 'computer.network_policy'",
        )
        .all() as { action: string }[];
      const actions = rows.map((row) => row.action);
      expect(actions.filter((action) => action === "egress.denied").length).toBeGreaterThanOrEqual(
        2,
      );
      expect(actions).toContain("egress.allowed");
      expect(actions.filter((action) => action === "computer.network_policy")).toHaveLength(2);
    } finally {
      database.close();
    }
  });
});
