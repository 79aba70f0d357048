/**
 * The computer routes against a real SQLite store and real workspace folders, with a stub
 * control plane: bad input gets a 4xx with a stable code and changes nothing; files stay inside
 * the caller's own /workspace.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { parseEgressPolicy } from "../egress/index.ts";
import { createEventHub } from "../events/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";
import {
  maxUploadBytes,
  type ComputerService,
  type ComputerStatusView,
} from "./computer-routes.ts";

type RequestBody = string | Uint8Array;

describe("computer routes", () => {
  let dir: string;
  let store: Store;
  let app: ReturnType<typeof createApi>;
  let alice: string;
  let bob: string;
  const states = new Map<string, ComputerStatusView>();

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-computer-routes-"));
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    const status = (id: string): ComputerStatusView =>
      states.get(id) ?? { id, state: "asleep", lastActiveAt: null, holders: 0, failure: null };
    const computers: ComputerService = {
      forAccount: async (accountId) => {
        const computer = await store.ensureComputer(accountId, "process");
        return { id: computer.id, provider: "process", isolated: false };
      },
      status: async (id) => status(id),
      wake: async (id) => {
        states.set(id, { ...status(id), state: "awake", lastActiveAt: 1 });
        return status(id);
      },
      sleep: async (id) => {
        const current = status(id);
        if (current.holders === 0) states.set(id, { ...current, state: "asleep" });
        return status(id);
      },
      workspaceDir: (id) => join(dir, "computers", id, "workspace"),
      networkPolicy: async (id) =>
        (await store.getNetworkPolicy(id)) ?? { mode: "defaults-and-allowlist", allow: [] },
      setNetworkPolicy: async (id, _accountId, input) => {
        const policy = parseEgressPolicy(input);
        await store.setNetworkPolicy(id, input);
        return policy;
      },
      egressEnforced: false,
    };
    app = createApi({
      store,
      events: createEventHub(),
      kick: async () => undefined,
      interrupt: () => false,
      health: async () => ({ ok: true, checks: {} }),
      checkModel: () => undefined,
      defaultModel: () => ({ id: "demo", isDemo: true }),
      maxBodyBytes: 1024 * 1024,
      computers,
    });
    const account = async (name: string) => {
      const created = await store.createAccount({ name, isAdmin: false });
      return (await issueApiToken(store, created.id, "test")).token;
    };
    alice = await account("alice");
    bob = await account("bob");
  });
  afterEach(async () => {
    states.clear();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = async (
    token: string | undefined,
    method: string,
    path: string,
    body?: RequestBody,
    contentType?: string,
  ) => {
    const headers: Record<string, string> = {};
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (contentType !== undefined) headers["content-type"] = contentType;
    const response = await app.request(path, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
    });
    const text = await response.text();
    let json: unknown = undefined;
    try {
      json = JSON.parse(text);
    } catch {
      // raw bytes (downloads)
    }
    return {
      status: response.status,
      text,
      json: json as { error?: { code: string; message: string } } & Record<string, unknown>,
    };
  };
  const workspaceOf = async (token: string) => {
    const me = await call(token, "GET", "/v1/computers/me");
    return join(dir, "computers", String(me.json.id), "workspace");
  };

  it("refuses every computer route without a valid token", async () => {
    for (const [method, path] of [
      ["GET", "/v1/computers/me"],
      ["POST", "/v1/computers/me/wake"],
      ["POST", "/v1/computers/me/sleep"],
      ["GET", "/v1/computers/me/files"],
      ["GET", "/v1/computers/me/files/content?path=/workspace/a"],
      ["PUT", "/v1/computers/me/files/content?path=/workspace/a"],
      ["GET", "/v1/computers/me/network-policy"],
      ["PUT", "/v1/computers/me/network-policy"],
    ] as const) {
      expect((await call(undefined, method, path)).json.error?.code, `${method} ${path}`).toBe(
        "unauthenticated",
      );
      expect((await call("roost_wrong", method, path)).status, `${method} ${path}`).toBe(401);
    }
  });

  it("shows the caller's computer, wakes it, and refuses to sleep it while a turn holds it", async () => {
    expect((await call(alice, "GET", "/v1/computers/me")).json).toMatchObject({
      provider: "process",
      state: "asleep",
      isolated: false,
    });
    const woke = await call(alice, "POST", "/v1/computers/me/wake");
    expect(woke.json).toMatchObject({ state: "awake" });
    const id = String(woke.json.id);
    states.set(id, { ...states.get(id)!, holders: 1 });
    const refused = await call(alice, "POST", "/v1/computers/me/sleep");
    expect(refused.status).toBe(409);
    expect(refused.json.error?.code).toBe("conflict");
    // Bob has a computer of his own.
    expect((await call(bob, "GET", "/v1/computers/me")).json.id).not.toBe(id);
  });

  it("uploads, lists and downloads files inside /workspace", async () => {
    const put = await call(
      alice,
      "PUT",
      "/v1/computers/me/files/content?path=/workspace/docs/a.txt",
      "hello",
    );
    expect(put.status).toBe(201);
    expect(put.json).toMatchObject({ path: "/workspace/docs/a.txt", size: 5, created: true });
    expect(
      (await call(alice, "PUT", "/v1/computers/me/files/content?path=docs/a.txt", "hello again"))
        .json,
    ).toMatchObject({ created: false });
    const listed = await call(alice, "GET", "/v1/computers/me/files?path=/workspace/docs");
    expect(listed.json).toMatchObject({
      path: "/workspace/docs",
      entries: [{ name: "a.txt", type: "file", size: 11 }],
    });
    expect((await call(alice, "GET", "/v1/computers/me/files")).json).toMatchObject({
      entries: [{ name: "docs", type: "dir" }],
    });
    const download = await call(
      alice,
      "GET",
      "/v1/computers/me/files/content?path=/workspace/docs/a.txt",
    );
    expect(download.text).toBe("hello again");
    // Bob sees his own (empty) workspace, not Alice's.
    expect((await call(bob, "GET", "/v1/computers/me/files")).json).toMatchObject({ entries: [] });
    expect(
      (await call(bob, "GET", "/v1/computers/me/files/content?path=/workspace/docs/a.txt")).status,
    ).toBe(404);
  });

  it("refuses paths that leave /workspace, wrong kinds of paths and oversize uploads", async () => {
    const workspace = await workspaceOf(alice);
    mkdirSync(join(workspace, "sub"), { recursive: true });
    writeFileSync(join(dir, "secret.txt"), "top secret");
    symlinkSync(join(dir, "secret.txt"), join(workspace, "escape"));
    symlinkSync(dir, join(workspace, "escape-dir"));

    const cases: [string, string, RequestBody | undefined, number, string][] = [
      [
        "GET",
        "/v1/computers/me/files?path=/workspace/../../etc",
        undefined,
        400,
        "invalid_request",
      ],
      ["GET", "/v1/computers/me/files?path=/workspace/missing", undefined, 404, "not_found"],
      ["GET", "/v1/computers/me/files?path=/workspace/escape-dir", undefined, 403, "forbidden"],
      ["GET", "/v1/computers/me/files/content?path=/workspace/escape", undefined, 403, "forbidden"],
      [
        "GET",
        "/v1/computers/me/files/content?path=/workspace/sub",
        undefined,
        400,
        "invalid_request",
      ],
      [
        "GET",
        "/v1/computers/me/files?path=/workspace/sub&extra=1",
        undefined,
        400,
        "invalid_request",
      ],
      ["PUT", "/v1/computers/me/files/content", "x", 400, "invalid_request"],
      ["PUT", "/v1/computers/me/files/content?path=/workspace", "x", 400, "invalid_request"],
      ["PUT", "/v1/computers/me/files/content?path=/workspace/sub", "x", 409, "conflict"],
      [
        "PUT",
        "/v1/computers/me/files/content?path=/workspace/escape-dir/planted.txt",
        "x",
        403,
        "forbidden",
      ],
      [
        "PUT",
        "/v1/computers/me/files/content?path=/workspace/big.bin",
        new Uint8Array(maxUploadBytes + 1),
        413,
        "payload_too_large",
      ],
    ];
    for (const [method, path, body, status, code] of cases) {
      const response = await call(alice, method, path, body);
      expect(response.status, `${method} ${path}`).toBe(status);
      expect(response.json.error?.code, `${method} ${path}`).toBe(code);
      expect(response.json.error?.message.length, `${method} ${path}`).toBeGreaterThan(10);
    }
    expect(readFileSync(join(dir, "secret.txt"), "utf8")).toBe("top secret");
    expect((await call(alice, "GET", "/v1/computers/me/files")).json.entries).toHaveLength(3); // sub, escape, escape-dir
  });

  it("validates network policies and stores nothing invalid", async () => {
    const initial = await call(alice, "GET", "/v1/computers/me/network-policy");
    expect(initial.json).toMatchObject({
      policy: { mode: "defaults-and-allowlist" },
      enforced: false,
    });
    const bad: [RequestBody, string | undefined, number, string][] = [
      ["{not json", "application/json", 400, "invalid_json"],
      [
        JSON.stringify({ policy: { mode: "allowlist-only" } }),
        "text/plain",
        415,
        "unsupported_media_type",
      ],
      [
        JSON.stringify({ policy: { mode: "sometimes" } }),
        "application/json",
        400,
        "invalid_request",
      ],
      [
        JSON.stringify({ policy: { mode: "allowlist-only", allow: ["*"] } }),
        "application/json",
        400,
        "invalid_request",
      ],
      [
        JSON.stringify({ policy: { mode: "allowlist-only" }, extra: true }),
        "application/json",
        400,
        "invalid_request",
      ],
    ];
    for (const [body, contentType, status, code] of bad) {
      const response = await call(
        alice,
        "PUT",
        "/v1/computers/me/network-policy",
        body,
        contentType,
      );
      expect(response.status, String(body)).toBe(status);
      expect(response.json.error?.code, String(body)).toBe(code);
    }
    expect((await call(alice, "GET", "/v1/computers/me/network-policy")).json).toEqual(
      initial.json,
    );

    const good = await call(
      alice,
      "PUT",
      "/v1/computers/me/network-policy",
      JSON.stringify({
        policy: { mode: "allowlist-only", allow: ["example.com", "10.0.0.5:5432"] },
      }),
      "application/json",
    );
    expect(good.status).toBe(200);
    expect((await call(alice, "GET", "/v1/computers/me/network-policy")).json.policy).toMatchObject(
      { mode: "allowlist-only" },
    );
    expect((await call(bob, "GET", "/v1/computers/me/network-policy")).json.policy).toMatchObject({
      mode: "defaults-and-allowlist",
    });
  });
});
