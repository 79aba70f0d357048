/**
 * A computer's way out, end to end: a bot's command reaches an outside host only through the
 * egress proxy and only as the computer's network policy allows; a changed policy reaches the
 * running computer at once; a direct connection that bypasses the proxy fails; refusals land in
 * the audit log. Then the attacks of the hardening issue, from inside a computer with the widest
 * policy a user can set: nothing of Roost itself or of the host answers, another user's computer
 * cannot be put to sleep, and a flood from one computer leaves the server and others working.
 * The outside host lives in a network namespace this test creates.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { floodScript } from "../../src/computers/local/testing/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

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

  /** A bot of the account behind `token`, and a way to run a shell command on its computer. */
  async function shellOf(token: () => string, name: string) {
    const api = apiClient(roost.url, token);
    const bot = await api.createBot(name);
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
    return { api, shell };
  }

  /** A second, ordinary account, made by the local admin. */
  async function otherAccount(name: string): Promise<() => string> {
    const admin = apiClient(roost.url, roost.token);
    const created = await admin.call<{ token: string }>("POST", "/v1/accounts", { name });
    return () => created.token;
  }

  const auditRows = (action: string) => {
    const database = new DatabaseSync(join(dataDir, "roost.db"), { readOnly: true });
    try {
      return (
        database.prepare("SELECT target, detail FROM audit_log WHERE action = ?").all(action) as {
          target: string;
          detail: string;
        }[]
      ).map((row) => ({
        target: row.target,
        detail: JSON.parse(row.detail) as Record<string, unknown>,
      }));
    } finally {
      database.close();
    }
  };

  it("allows what the policy allows, refuses the rest, applies changes at once, and logs refusals", async () => {
    const { api, shell } = await shellOf(roost.token, "netizen");
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

  it("a user's own network policy opens the host (attack): rules that can only reach refused ranges are a 400 that says why", async () => {
    const api = apiClient(roost.url, roost.token);
    const refused: [string, RegExp][] = [
      ["127.0.0.1:*", /"127\.0\.0\.1" is loopback/],
      [`127.0.0.1:${roost.ports.api}`, /is loopback/],
      ["[::1]:7700", /is loopback/],
      ["169.254.169.254", /link-local \(this includes cloud metadata services/],
      ["0.0.0.0", /is unspecified/],
      [
        "10.0.0.0/8",
        /only the operator can open private ranges for computers \(ROOST_EGRESS_ALLOW_PRIVATE\)/,
      ],
      ["192.168.1.1:5432", /ROOST_EGRESS_ALLOW_PRIVATE/],
      ["localhost:8080", /names loopback/],
    ];
    for (const [rule, reason] of refused) {
      const response = await fetch(`${roost.url}/v1/computers/me/network-policy`, {
        method: "PUT",
        headers: { authorization: `Bearer ${roost.token()}`, "content-type": "application/json" },
        body: JSON.stringify({ policy: { mode: "allowlist-only", allow: ["github.com", rule] } }),
      });
      expect(response.status, rule).toBe(400);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code, rule).toBe("invalid_request");
      expect(body.error.message, rule).toMatch(/^field "policy\.allow\.1": /);
      expect(body.error.message, rule).toMatch(reason);
    }
    // The broad rules and allow-all are accepted: they reach public addresses only.
    const widest = { mode: "allow-all", allow: ["0.0.0.0/0:*", "::/0:*"] };
    expect(
      await api.call("PUT", "/v1/computers/me/network-policy", { policy: widest }),
    ).toMatchObject({ policy: { mode: "allow-all" } });
  });

  it("with the widest policy a user can set, nothing of Roost or the host answers a computer: /auth/local, Restate, the service port, Postgres, Redis, NATS, MariaDB (attack)", async () => {
    const { api, shell } = await shellOf(roost.token, "prober");
    await api.call("PUT", "/v1/computers/me/network-policy", {
      policy: { mode: "allow-all", allow: ["0.0.0.0/0:*", "::/0:*"] },
    });
    const { api: apiPort, ingress, admin, node, service } = roost.ports;
    const targets = [
      `http://127.0.0.1:${apiPort}/auth/local`,
      `http://localhost:${apiPort}/auth/local`,
      `http://[::1]:${apiPort}/auth/local`,
      `http://0.0.0.0:${apiPort}/auth/local`,
      `http://127.0.0.1:${ingress}/computer/x/sleep`,
      `http://127.0.0.1:${admin}/deployments`,
      `http://127.0.0.1:${node}/`,
      `http://127.0.0.1:${service}/`,
      "http://127.0.0.1:5432/",
      "http://127.0.0.1:6379/",
      "http://127.0.0.1:4222/",
      "http://127.0.0.1:3306/",
      "http://169.254.169.254/latest/meta-data/",
    ];
    // --noproxy '': through the proxy even for names NO_PROXY keeps local (inside, they are the
    // computer's own loopback, which has none of these).
    const probe = targets
      .map(
        (url) =>
          `printf '%s %s\\n' "$(curl -sS -m 5 --noproxy '' -o /dev/null -w '%{http_code}' ${url} 2>/dev/null)" ${url}`,
      )
      .join("; ");
    const lines = (await shell(probe)).trim().split("\n");
    expect(lines).toEqual(targets.map((url) => `403 ${url}`));
    // CONNECT and SOCKS5 are refused the same way (curl: 56 = the CONNECT answer was not 200,
    // 97 = the SOCKS5 server refused the request).
    const socks = `--noproxy '' --proxy socks5h://127.0.0.1:1080`;
    const tunnels = await shell(
      [
        `curl -sS -m 5 -p --noproxy '' http://127.0.0.1:${apiPort}/auth/local >/dev/null 2>&1; echo "connect $?"`,
        `curl -sS -m 5 ${socks} http://127.0.0.1:${apiPort}/auth/local >/dev/null 2>&1; echo "socks-address $?"`,
        `curl -sS -m 5 ${socks} http://db.localhost:5432/ >/dev/null 2>&1; echo "socks-name $?"`,
      ].join("; "),
    );
    expect(tunnels).toBe("connect 56\nsocks-address 97\nsocks-name 97\n");
    // Every one of them is in the audit log as a refusal.
    const denied = await waitFor(() => {
      const rows = auditRows("egress.denied");
      const ports = new Set(rows.map((row) => row.detail.port));
      return [apiPort, ingress, admin, node, service, 5432, 6379, 4222, 3306, 80].every((port) =>
        ports.has(port),
      )
        ? rows
        : undefined;
    });
    expect(denied.filter((row) => row.detail.port === apiPort).length).toBeGreaterThanOrEqual(6);
    expect(denied.some((row) => row.detail.method === "SOCKS5")).toBe(true);
  });

  it("one user cannot put another user's computer to sleep through Restate's ingress (attack)", async () => {
    const bob = await otherAccount("bob");
    const bobApi = apiClient(roost.url, bob);
    const awake = await bobApi.call<{ id: string; state: string }>("POST", "/v1/computers/me/wake");
    expect(awake.state).toBe("awake");
    const { api, shell } = await shellOf(roost.token, "saboteur");
    await api.call("PUT", "/v1/computers/me/network-policy", {
      policy: { mode: "allow-all", allow: ["0.0.0.0/0:*", "::/0:*"] },
    });
    const attempt = await shell(
      [
        `curl -sS -m 5 --noproxy '' -o /dev/null -w '%{http_code}' -X POST -H 'content-type: application/json' -d '{}' http://127.0.0.1:${roost.ports.ingress}/${"computer"}/${awake.id}/sleep; echo`,
        `curl -sS -m 3 --noproxy '*' -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:${roost.ports.ingress}/computer/${awake.id}/sleep 2>/dev/null; echo " exit $?"`,
      ].join("; "),
    );
    const [viaProxy, direct] = attempt.trim().split("\n");
    expect(viaProxy).toBe("403");
    expect(direct).toMatch(/^000 exit [1-9]/); // the computer's own loopback: nothing there
    expect((await bobApi.call<{ state: string }>("GET", "/v1/computers/me")).state).toBe("awake");
  });

  it("one computer cannot take the server down (attack): a flood of half-open connections leaves /v1/health and another user's computer working", async () => {
    const carol = await otherAccount("carol");
    const victim = await shellOf(carol, "victim");
    await victim.api.call("PUT", "/v1/computers/me/network-policy", {
      policy: { mode: "allowlist-only", allow: [`${outside.address}:8080`] },
    });
    expect(await victim.shell(`curl -sS -m 10 http://${outside.address}:8080/`)).toBe(
      "hello from outside\n",
    );
    const attacker = await shellOf(roost.token, "flooder");
    const pid = roost.pid()!;
    const descriptors = () => readdirSync(`/proc/${pid}/fd`).length;
    const before = descriptors();
    await attacker.shell(
      `cat > /tmp/flood.js <<'EOF'\n${floodScript}\nEOF\nnohup node -e "$(cat /tmp/flood.js)" 3000 25 >/tmp/flood.log 2>&1 &\necho started`,
    );
    await waitFor(
      () =>
        roost.output().includes("a computer reached its limit of connections to the egress proxy"),
      {
        timeoutMs: 20_000,
        what: "the proxy's per-computer limit to be hit and logged",
      },
    );
    await waitFor(
      () =>
        roost
          .output()
          .includes("a computer reached its limit of connections to its gateway socket"),
      { timeoutMs: 20_000, what: "the gateway socket's limit to be hit and logged" },
    );
    for (let round = 0; round < 3; round++) {
      const health = await fetch(`${roost.url}/v1/health`);
      expect(health.status).toBe(200);
    }
    expect(await victim.shell(`curl -sS -m 10 http://${outside.address}:8080/`)).toBe(
      "hello from outside\n",
    );
    // 12,000 connections from one computer cost the server at most its per-computer limits.
    expect(descriptors() - before).toBeLessThan(600);
  });
});
