/**
 * The computer routes against a real SQLite store, a real gateway and real worker processes
 * (one per computer, started by the test's wake), with a stub control plane. The workers run as
 * this test's user on the host, as with the `process` provider, and as root in CI: the worst case
 * for the files API, whose safety then rests on the worker's no-follow resolution alone. Bad input
 * gets a 4xx with a stable code and changes nothing; files stay inside the caller's own /workspace.
 */
import { createHash, randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { python3, startSwapLoop } from "../../test/support/swap-race.ts";
import { hashToken, issueApiToken } from "../auth/index.ts";
import { parseEgressPolicy } from "../egress/index.ts";
import { createEventHub } from "../events/index.ts";
import {
  makeComputerDirs,
  rawClient,
  spawnWorker,
  startTestGateway,
  waitFor,
  waitForWorkerProcess,
  type TestGateway,
  type WorkerProcess,
} from "../gateway/testing/index.ts";
import type { Api } from "../protocol/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";
import { createFilesClient } from "./computer-files.ts";
import {
  maxUploadBytes,
  type ComputerService,
  type ComputerStatusView,
} from "./computer-routes.ts";

type RequestBody = string | Uint8Array;

let gw: TestGateway;
/** The store of the running test: the gateway checks self-hosted tokens in it, as the platform does. */
let currentStore: Store | undefined;
beforeAll(async () => {
  gw = await startTestGateway({
    verifyToken: async (token) => {
      const computerId =
        gw.tokens.get(token) ?? (await currentStore?.findSelfHostedComputer(hashToken(token)));
      return computerId === undefined ? undefined : { computerId };
    },
  });
});
afterAll(async () => {
  await gw.close();
});

describe("computer routes", () => {
  let dir: string;
  let store: Store;
  let app: ReturnType<typeof createApi>;
  let alice: string;
  let bob: string;
  const states = new Map<string, ComputerStatusView>();
  const workers = new Map<string, WorkerProcess>();
  let wakes: string[];

  const workspaceDir = (id: string) => join(dir, "computers", id, "workspace");

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-computer-routes-"));
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    currentStore = store;
    wakes = [];
    const status = (id: string): ComputerStatusView =>
      states.get(id) ?? { id, state: "asleep", lastActiveAt: null, holders: 0, failure: null };
    const computers: ComputerService = {
      forAccount: async (accountId) => {
        const computer = await store.ensureComputer(accountId, "process");
        return { id: computer.id, provider: "process", isolated: false, kind: computer.kind };
      },
      // What the control plane answers for a self-hosted computer: its connection (C7).
      status: async (id) =>
        (await store.getComputer(id))?.kind === "self-hosted"
          ? {
              ...status(id),
              kind: "self-hosted",
              state: gw.gateway.isConnected(id) ? "connected" : "disconnected",
            }
          : status(id),
      isConnected: (id) => gw.gateway.isConnected(id),
      // The control plane's switch (C8), without the hosted sleep: these computers have no sandbox.
      useSelfHosted: async (id, _accountId, tokenHash) => {
        const result = await store.useSelfHosted(id, tokenHash);
        await gw.gateway.disconnect(id, "the computer's self-hosted worker token was replaced");
        return result;
      },
      useHosted: async (id) => {
        const result = await store.useHosted(id);
        if (result.changed) await gw.gateway.disconnect(id, "the self-hosted computer was removed");
        return result;
      },
      // A real worker process per computer, dialling the real gateway, like the process provider.
      wake: async (id) => {
        wakes.push(id);
        if (!workers.has(id)) {
          const root = join(dir, "computers", id);
          const dirs = {
            root,
            stateDir: join(root, "worker"),
            workspace: workspaceDir(id),
            home: join(root, "home"),
            remove: () => undefined,
          };
          for (const folder of [dirs.stateDir, dirs.workspace, dirs.home])
            mkdirSync(folder, { recursive: true });
          const token = `token-${id}`;
          gw.tokens.set(token, id);
          const worker = spawnWorker({ gatewayUrl: gw.url, token, dirs });
          workers.set(id, worker);
          await waitForWorkerProcess(gw.gateway, id, worker);
        }
        states.set(id, { ...status(id), state: "awake", lastActiveAt: 1 });
        return status(id);
      },
      sleep: async (id) => {
        const current = status(id);
        if (current.holders === 0) states.set(id, { ...current, state: "asleep" });
        return status(id);
      },
      files: createFilesClient(gw.gateway),
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
      // The race tests send thousands of requests from one token on purpose.
      limits: { requestsPerMinute: 0 },
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
    await Promise.all([...workers.values()].map((worker) => worker.stop()));
    workers.clear();
    currentStore = undefined;
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
    const bytes = Buffer.from(await response.arrayBuffer());
    const text = bytes.toString("utf8");
    let json: unknown = undefined;
    try {
      json = JSON.parse(text);
    } catch {
      // raw bytes (downloads)
    }
    return {
      status: response.status,
      headers: response.headers,
      bytes,
      text,
      json: json as { error?: { code: string; message: string } } & Record<string, unknown>,
    };
  };
  const json = (token: string, method: string, path: string, body: unknown) =>
    call(token, method, path, JSON.stringify(body), "application/json");
  const q = (path: string) => encodeURIComponent(path);
  const upload = (token: string, path: string, body: RequestBody) =>
    call(token, "PUT", `/v1/computers/me/files/content?path=${q(path)}`, body);
  const download = (token: string, path: string) =>
    call(token, "GET", `/v1/computers/me/files/content?path=${q(path)}`);
  const list = (token: string, path = "/workspace") =>
    call(token, "GET", `/v1/computers/me/files?path=${q(path)}`);
  const computerIdOf = async (token: string) =>
    String((await call(token, "GET", "/v1/computers/me")).json.id);
  /** Wakes the caller's computer (starting its worker) and returns its workspace on the host. */
  const workspaceOf = async (token: string) => {
    expect((await list(token)).status).toBe(200);
    return workspaceDir(await computerIdOf(token));
  };
  const auditActions = async (token: string) => {
    const me = await call(token, "GET", "/v1/me");
    return (await store.listAudit({ accountId: String(me.json.id) })).map((entry) => ({
      action: entry.action,
      detail: entry.detail,
    }));
  };

  it("refuses every computer route without a valid token", async () => {
    for (const [method, path] of [
      ["GET", "/v1/computers/me"],
      ["POST", "/v1/computers/me/wake"],
      ["POST", "/v1/computers/me/sleep"],
      ["GET", "/v1/computers/me/files"],
      ["GET", "/v1/computers/me/files/content?path=/workspace/a"],
      ["PUT", "/v1/computers/me/files/content?path=/workspace/a"],
      ["DELETE", "/v1/computers/me/files?path=/workspace/a"],
      ["POST", "/v1/computers/me/files/rename"],
      ["POST", "/v1/computers/me/files/mkdir"],
      ["GET", "/v1/computers/me/network-policy"],
      ["PUT", "/v1/computers/me/network-policy"],
    ] as const) {
      expect((await call(undefined, method, path)).json.error?.code, `${method} ${path}`).toBe(
        "unauthenticated",
      );
      expect((await call("roost_wrong", method, path)).status, `${method} ${path}`).toBe(401);
    }
    expect(workers.size).toBe(0);
  });

  it("shows the caller's computer, wakes it, and refuses to sleep it while a turn holds it", async () => {
    expect((await call(alice, "GET", "/v1/computers/me")).json).toMatchObject({
      provider: "process",
      state: "asleep",
      isolated: false,
      isolation: "none",
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

  it("uploads, lists and downloads files inside /workspace, waking the computer for it", async () => {
    const id = await computerIdOf(alice);
    expect(states.get(id)).toBeUndefined(); // asleep
    const put = await upload(alice, "/workspace/docs/a.txt", "hello");
    expect(put.status).toBe(201);
    expect(put.json).toEqual({ path: "/workspace/docs/a.txt", size: 5, created: true });
    expect(wakes).toContain(id); // the upload woke the computer
    expect((await upload(alice, "docs/a.txt", "hello again")).json).toMatchObject({
      created: false,
    });
    const listed = await list(alice, "/workspace/docs");
    expect(listed.json).toMatchObject({
      path: "/workspace/docs",
      entries: [{ name: "a.txt", type: "file", size: 11 }],
      truncated: false,
    });
    expect(
      Date.parse(String((listed.json.entries as { modifiedAt: string }[])[0]?.modifiedAt)),
    ).toBeGreaterThan(0);
    expect((await call(alice, "GET", "/v1/computers/me/files")).json).toMatchObject({
      path: "/workspace",
      entries: [{ name: "docs", type: "dir" }],
    });
    const got = await download(alice, "/workspace/docs/a.txt");
    expect(got.status).toBe(200);
    expect(got.text).toBe("hello again");
    expect(got.headers.get("content-length")).toBe("11");
    expect(got.headers.get("content-type")).toBe("application/octet-stream");
    // The folder the upload made belongs to the worker's user (the computer's own).
    expect(statSync(join(workspaceDir(id), "docs")).uid).toBe(process.getuid?.());
    // A listing wakes a sleeping computer too (the accepted design: docs/api.md).
    states.set(id, { ...states.get(id)!, state: "asleep" });
    const before = wakes.length;
    expect((await list(alice)).status).toBe(200);
    expect(wakes.length).toBe(before + 1);
    expect(states.get(id)?.state).toBe("awake");
  });

  it("downloads a file larger than one chunk (several worker calls) byte for byte", async () => {
    const content = randomBytes(7 * 1024 * 1024 + 123);
    const put = await upload(alice, "/workspace/big.bin", content);
    expect(put.json).toMatchObject({ size: content.byteLength, created: true });
    const got = await download(alice, "/workspace/big.bin");
    expect(got.headers.get("content-length")).toBe(String(content.byteLength));
    expect(createHash("sha256").update(got.bytes).digest("hex")).toBe(
      createHash("sha256").update(content).digest("hex"),
    );
  });

  it("a file that changes during a download cuts the download off instead of mixing two versions", async () => {
    const workspace = await workspaceOf(alice);
    writeFileSync(join(workspace, "moving.bin"), Buffer.alloc(7 * 1024 * 1024, 1));
    const response = await app.request(
      "/v1/computers/me/files/content?path=/workspace/moving.bin",
      {
        headers: { authorization: `Bearer ${alice}` },
      },
    );
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(first.value?.byteLength).toBeGreaterThan(0);
    writeFileSync(join(workspace, "moving.bin"), Buffer.alloc(7 * 1024 * 1024 + 1, 2));
    await expect(
      (async () => {
        for (;;) if ((await reader.read()).done) return "complete";
      })(),
    ).rejects.toThrow(/changed while it was being downloaded/);
  });

  it("lists, uploads and downloads names with CR, LF, quotes, backslashes and non-ASCII characters", async () => {
    const names = [
      'résumé "x".txt',
      "a\nb",
      "carriage\rreturn",
      "back\\slash;%20.txt",
      "日本語.md",
      "emoji 🦜",
    ];
    for (const [index, name] of names.entries()) {
      const put = await upload(alice, `/workspace/odd/${name}`, `content ${index}`);
      expect(put.status, JSON.stringify(name)).toBe(201);
      expect(put.json.path).toBe(`/workspace/odd/${name}`);
    }
    const listed = await list(alice, "/workspace/odd");
    expect((listed.json.entries as { name: string }[]).map((entry) => entry.name).sort()).toEqual(
      [...names].sort(),
    );
    for (const [index, name] of names.entries()) {
      const got = await download(alice, `/workspace/odd/${name}`);
      expect(got.status, JSON.stringify(name)).toBe(200);
      expect(got.text).toBe(`content ${index}`);
      const disposition = got.headers.get("content-disposition")!;
      expect(disposition).not.toMatch(/[\r\n]/);
      expect(disposition).toMatch(
        /^attachment; filename="[\x20-\x7e]*"; filename\*=UTF-8''[A-Za-z0-9!#$&+\-.^_`|~%]+$/,
      );
      const encoded = /filename\*=UTF-8''(.+)$/.exec(disposition)![1]!;
      expect(decodeURIComponent(encoded)).toBe(name);
      const fallback = /filename="([^"]*)"/.exec(disposition)![1]!;
      expect(fallback).not.toMatch(/["\\%]/);
    }
    expect(
      (await download(alice, '/workspace/odd/résumé "x".txt')).headers.get("content-disposition"),
    ).toBe(
      `attachment; filename="resume _x_.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22x%22.txt`,
    );
  });

  it("deletes, renames and makes folders, and audits each change", async () => {
    expect(
      (await json(alice, "POST", "/v1/computers/me/files/mkdir", { path: "/workspace/p/q" }))
        .status,
    ).toBe(201);
    const again = await json(alice, "POST", "/v1/computers/me/files/mkdir", { path: "p/q" });
    expect(again.status).toBe(200);
    expect(again.json).toEqual({ path: "/workspace/p/q", created: false });
    await upload(alice, "/workspace/p/q/f.txt", "f");
    const renamed = await json(alice, "POST", "/v1/computers/me/files/rename", {
      from: "/workspace/p/q/f.txt",
      to: "/workspace/p/g.txt",
    });
    expect(renamed.status).toBe(200);
    expect(renamed.json).toEqual({
      from: "/workspace/p/q/f.txt",
      to: "/workspace/p/g.txt",
      type: "file",
    });
    const moved = await json(alice, "POST", "/v1/computers/me/files/rename", {
      from: "p/q",
      to: "r",
    });
    expect(moved.json).toEqual({ from: "/workspace/p/q", to: "/workspace/r", type: "dir" });
    const notEmpty = await call(alice, "DELETE", "/v1/computers/me/files?path=/workspace/p");
    expect(notEmpty.status).toBe(409);
    expect(notEmpty.json.error?.message).toContain("recursive=true");
    const deleted = await call(
      alice,
      "DELETE",
      "/v1/computers/me/files?path=/workspace/p&recursive=true",
    );
    expect(deleted.status).toBe(200);
    expect(deleted.json).toEqual({ path: "/workspace/p", type: "dir" });
    expect((await call(alice, "DELETE", "/v1/computers/me/files?path=r")).json).toEqual({
      path: "/workspace/r",
      type: "dir",
    });
    expect((await list(alice)).json.entries).toEqual([]);
    expect((await auditActions(alice)).reverse()).toEqual([
      { action: "computer.files.mkdir", detail: { path: "/workspace/p/q" } },
      {
        action: "computer.files.upload",
        detail: { path: "/workspace/p/q/f.txt", size: 1, created: true },
      },
      {
        action: "computer.files.rename",
        detail: { from: "/workspace/p/q/f.txt", to: "/workspace/p/g.txt", type: "file" },
      },
      {
        action: "computer.files.rename",
        detail: { from: "/workspace/p/q", to: "/workspace/r", type: "dir" },
      },
      {
        action: "computer.files.delete",
        detail: { path: "/workspace/p", type: "dir", recursive: true },
      },
      {
        action: "computer.files.delete",
        detail: { path: "/workspace/r", type: "dir", recursive: false },
      },
    ]);
  });

  it("refuses bad paths and requests with 4xx, changes nothing, and audits nothing", async () => {
    const workspace = await workspaceOf(alice);
    mkdirSync(join(workspace, "sub/inner"), { recursive: true });
    mkdirSync(join(workspace, "other"));
    writeFileSync(join(workspace, "sub/inner/keep.txt"), "keep");
    const cases: [string, string, RequestBody | undefined, number, string, RegExp?][] = [
      [
        "GET",
        "/v1/computers/me/files?path=/workspace/../../etc",
        undefined,
        400,
        "invalid_request",
        /inside \/workspace/,
      ],
      ["GET", "/v1/computers/me/files?path=../etc", undefined, 400, "invalid_request", /`\.\.`/],
      [
        "GET",
        "/v1/computers/me/files?path=/etc/passwd",
        undefined,
        400,
        "invalid_request",
        /outside \/workspace; paths must be inside \/workspace/,
      ],
      [
        "GET",
        "/v1/computers/me/files/content?path=/etc/passwd",
        undefined,
        400,
        "invalid_request",
        /paths must be inside \/workspace/,
      ],
      [
        "GET",
        "/v1/computers/me/files/content?path=/workspace/a%00b",
        undefined,
        400,
        "invalid_request",
        /NUL/,
      ],
      ["GET", "/v1/computers/me/files/content", undefined, 400, "invalid_request", /\?path=/],
      ["GET", "/v1/computers/me/files/content?path=/workspace", undefined, 400, "invalid_request"],
      ["GET", "/v1/computers/me/files?path=/workspace/missing", undefined, 404, "not_found"],
      [
        "GET",
        "/v1/computers/me/files?path=/workspace/sub/inner/keep.txt",
        undefined,
        400,
        "invalid_request",
        /GET \/v1\/computers\/me\/files\/content\?path=\/workspace\/sub\/inner\/keep\.txt/,
      ],
      [
        "GET",
        "/v1/computers/me/files/content?path=/workspace/sub",
        undefined,
        400,
        "invalid_request",
        /folder/,
      ],
      [
        "GET",
        "/v1/computers/me/files?path=/workspace/sub&extra=1",
        undefined,
        400,
        "invalid_request",
      ],
      [
        "GET",
        "/v1/computers/me/files?path=/workspace/sub&path=/workspace/other",
        undefined,
        400,
        "invalid_request",
        /once/,
      ],
      ["PUT", "/v1/computers/me/files/content", "x", 400, "invalid_request"],
      ["PUT", "/v1/computers/me/files/content?path=/workspace", "x", 400, "invalid_request"],
      ["PUT", "/v1/computers/me/files/content?path=/workspace/sub", "x", 409, "conflict"],
      [
        "PUT",
        "/v1/computers/me/files/content?path=/tmp/x",
        "x",
        400,
        "invalid_request",
        /inside \/workspace/,
      ],
      ["DELETE", "/v1/computers/me/files", undefined, 400, "invalid_request"],
      [
        "DELETE",
        "/v1/computers/me/files?path=/workspace&recursive=true",
        undefined,
        400,
        "invalid_request",
        /itself/,
      ],
      [
        "DELETE",
        "/v1/computers/me/files?path=.&recursive=true",
        undefined,
        400,
        "invalid_request",
        /itself/,
      ],
      [
        "DELETE",
        "/v1/computers/me/files?path=/workspace/sub/..&recursive=true",
        undefined,
        400,
        "invalid_request",
      ],
      [
        "DELETE",
        "/v1/computers/me/files?path=/workspace/sub&recursive=yes",
        undefined,
        400,
        "invalid_request",
      ],
      ["DELETE", "/v1/computers/me/files?path=/workspace/missing", undefined, 404, "not_found"],
      ["DELETE", "/v1/computers/me/files?path=/workspace/sub", undefined, 409, "conflict"],
    ];
    for (const [method, path, body, status, code, message] of cases) {
      const response = await call(alice, method, path, body);
      expect(response.status, `${method} ${path}`).toBe(status);
      expect(response.json.error?.code, `${method} ${path}`).toBe(code);
      expect(response.json.error?.message.length, `${method} ${path}`).toBeGreaterThan(10);
      if (message !== undefined)
        expect(response.json.error?.message, `${method} ${path}`).toMatch(message);
    }
    const bodies: [string, unknown, number, string, RegExp?][] = [
      ["rename", { from: "/workspace/sub" }, 400, "invalid_request"],
      [
        "rename",
        { from: "/workspace/sub", to: "/workspace/other" },
        409,
        "conflict",
        /never replaces/,
      ],
      [
        "rename",
        { from: "/workspace/sub", to: "/workspace/sub/inner/x" },
        400,
        "invalid_request",
        /into itself/,
      ],
      ["rename", { from: "/workspace", to: "/workspace/x" }, 400, "invalid_request"],
      [
        "rename",
        { from: "/workspace/sub", to: "/etc/sub" },
        400,
        "invalid_request",
        /inside \/workspace/,
      ],
      ["rename", { from: "/workspace/sub", to: "../sub" }, 400, "invalid_request"],
      ["rename", { from: "/workspace/missing", to: "/workspace/x" }, 404, "not_found"],
      [
        "rename",
        { from: "/workspace/sub", to: "/workspace/sub", extra: 1 },
        400,
        "invalid_request",
      ],
      ["mkdir", {}, 400, "invalid_request"],
      ["mkdir", { path: "/workspace/sub/inner/keep.txt/deeper" }, 409, "conflict"],
      ["mkdir", { path: "/var/x" }, 400, "invalid_request", /inside \/workspace/],
    ];
    for (const [route, body, status, code, message] of bodies) {
      const response = await json(alice, "POST", `/v1/computers/me/files/${route}`, body);
      expect(response.status, `${route} ${JSON.stringify(body)}`).toBe(status);
      expect(response.json.error?.code, `${route} ${JSON.stringify(body)}`).toBe(code);
      if (message !== undefined) expect(response.json.error?.message).toMatch(message);
    }
    expect(readFileSync(join(workspace, "sub/inner/keep.txt"), "utf8")).toBe("keep");
    expect(readdirSync(workspace).sort()).toEqual(["other", "sub"]);
    expect(await auditActions(alice)).toEqual([]);
  });

  it("an upload over 25 MiB gets 413 with the limit in the message and leaves no temporary file", async () => {
    const workspace = await workspaceOf(alice);
    const response = await upload(alice, "/workspace/big.bin", new Uint8Array(maxUploadBytes + 1));
    expect(response.status).toBe(413);
    expect(response.json.error?.code).toBe("payload_too_large");
    expect(response.json.error?.message).toContain(String(maxUploadBytes));
    // Sent without a length (chunked), the limit holds too.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let index = 0; index < 26; index++) controller.enqueue(new Uint8Array(1024 * 1024));
        controller.close();
      },
    });
    const chunked = await app.request("/v1/computers/me/files/content?path=/workspace/big2.bin", {
      method: "PUT",
      headers: { authorization: `Bearer ${alice}` },
      body: stream,
      duplex: "half",
    });
    expect(chunked.status).toBe(413);
    expect(readdirSync(workspace)).toEqual([]);
    expect(await auditActions(alice)).toEqual([]);
  });

  it("another account cannot read, write, delete or rename in someone else's computer: 404 as for what does not exist", async () => {
    await upload(alice, "/workspace/private/a.txt", "alice's");
    const bobsWorkspace = await workspaceOf(bob);
    expect((await list(bob)).json.entries).toEqual([]);
    expect((await download(bob, "/workspace/private/a.txt")).status).toBe(404);
    expect((await list(bob, "/workspace/private")).status).toBe(404);
    expect(
      (await call(bob, "DELETE", "/v1/computers/me/files?path=/workspace/private&recursive=true"))
        .status,
    ).toBe(404);
    expect(
      (
        await json(bob, "POST", "/v1/computers/me/files/rename", {
          from: "/workspace/private/a.txt",
          to: "/workspace/mine.txt",
        })
      ).status,
    ).toBe(404);
    // Bob's upload to the same path lands in his own workspace only.
    expect((await upload(bob, "/workspace/private/a.txt", "bob's")).status).toBe(201);
    expect(readFileSync(join(bobsWorkspace, "private/a.txt"), "utf8")).toBe("bob's");
    expect((await download(alice, "/workspace/private/a.txt")).text).toBe("alice's");
  });

  it("symlink-out upload: link -> / and link -> /etc, then PUT /workspace/link/newdir/f is refused and nothing is written on the host", async () => {
    const workspace = await workspaceOf(alice);
    const outside = join(dir, "outside");
    mkdirSync(outside);
    symlinkSync("/", join(workspace, "link"));
    symlinkSync("/etc", join(workspace, "etc-link"));
    symlinkSync(outside, join(workspace, "out-link"));
    for (const path of [
      "/workspace/link/newdir/f",
      "/workspace/etc-link/newdir/f",
      "/workspace/out-link/f",
      "/workspace/link/tmp/f",
    ]) {
      const response = await upload(alice, path, "planted");
      expect(response.status, path).toBe(403);
      expect(response.json.error?.code).toBe("forbidden");
      expect(response.json.error?.message).toMatch(/symbolic link .*does not follow links/);
    }
    for (const path of ["/workspace/link/etc/passwd", "/workspace/etc-link/passwd"]) {
      expect((await download(alice, path)).status, path).toBe(403);
    }
    expect(
      (
        await json(alice, "POST", "/v1/computers/me/files/mkdir", {
          path: "/workspace/link/newdir",
        })
      ).status,
    ).toBe(403);
    expect(
      (
        await json(alice, "POST", "/v1/computers/me/files/rename", {
          from: "/workspace/link/etc/hostname",
          to: "/workspace/h",
        })
      ).status,
    ).toBe(403);
    expect(existsSync("/newdir")).toBe(false);
    expect(existsSync("/etc/newdir")).toBe(false);
    expect(existsSync("/tmp/f")).toBe(false);
    expect(readdirSync(outside)).toEqual([]);
    // The links themselves are listed (with their targets) and can be deleted; their targets stay.
    expect((await list(alice)).json.entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "link", type: "symlink", target: "/" }),
      ]),
    );
    expect(
      (
        await call(
          alice,
          "DELETE",
          "/v1/computers/me/files?path=/workspace/etc-link&recursive=true",
        )
      ).json,
    ).toEqual({
      path: "/workspace/etc-link",
      type: "symlink",
    });
    expect(existsSync("/etc/passwd")).toBe(true);
  });

  it.skipIf(python3 === undefined)(
    "swap race: a file and a folder swapped with symlinks to /etc/shadow and the admin token while GET and PUT run never leak or change a host file",
    async () => {
      // Without python3 (for renameat2), this attack cannot be staged here: skipIf above.
      const workspace = await workspaceOf(alice);
      const secrets = join(dir, "host-secrets");
      mkdirSync(secrets);
      const adminToken = `roost_${randomBytes(24).toString("base64url")}`;
      writeFileSync(join(secrets, "admin-token"), adminToken, { mode: 0o600 });
      writeFileSync(join(secrets, "shadow"), "sentinel: must never change\n", { mode: 0o600 });
      const shadow = existsSync("/etc/shadow") ? readFileSync("/etc/shadow") : undefined;
      const shadowHash =
        shadow === undefined ? undefined : createHash("sha256").update(shadow).digest("hex");
      // x and y swap: x is a harmless file or a link to /etc/shadow. d and e swap: d is a
      // folder holding a harmless `admin-token` or a link to the folder with the real one.
      writeFileSync(join(workspace, "x"), "harmless x");
      symlinkSync(
        shadow === undefined ? join(secrets, "admin-token") : "/etc/shadow",
        join(workspace, "y"),
      );
      mkdirSync(join(workspace, "d"));
      writeFileSync(join(workspace, "d/admin-token"), "harmless d");
      symlinkSync(secrets, join(workspace, "e"));
      const loop = await startSwapLoop(join(dir, "stop"), [
        [join(workspace, "x"), join(workspace, "y")],
        [join(workspace, "d"), join(workspace, "e")],
      ]);
      const outcomes = new Map<string, number>();
      const note = (what: string) => outcomes.set(what, (outcomes.get(what) ?? 0) + 1);
      let swaps: number;
      try {
        for (let round = 0; round < 60; round++) {
          for (const path of [
            "/workspace/x",
            "/workspace/y",
            "/workspace/d/admin-token",
            "/workspace/e/admin-token",
          ]) {
            const got = await download(alice, path);
            if (got.status === 200) {
              expect(got.text.startsWith("harmless")).toBe(true);
              note("read harmless");
            } else {
              expect([403, 404, 409]).toContain(got.status);
              note(`read ${got.status}`);
            }
            expect(got.text).not.toContain(adminToken);
            if (shadow !== undefined && shadow.length > 0)
              expect(got.bytes.includes(shadow)).toBe(false);
          }
          for (const path of [
            "/workspace/x",
            "/workspace/d/admin-token",
            "/workspace/d/planted",
            "/workspace/e/shadow",
          ]) {
            const put = await upload(alice, path, `harmless write ${round}`);
            note(`write ${put.status}`);
            expect([201, 403, 404, 409]).toContain(put.status);
          }
        }
      } finally {
        swaps = await loop.stop();
      }
      expect(swaps).toBeGreaterThan(1000);
      // The race was live: both the user's own files and refused links were seen.
      expect(outcomes.get("read harmless") ?? 0).toBeGreaterThan(0);
      expect(outcomes.get("read 403") ?? 0).toBeGreaterThan(0);
      expect(readFileSync(join(secrets, "admin-token"), "utf8")).toBe(adminToken);
      expect(readFileSync(join(secrets, "shadow"), "utf8")).toBe("sentinel: must never change\n");
      expect(readdirSync(secrets).sort()).toEqual(["admin-token", "shadow"]);
      if (shadow !== undefined)
        expect(createHash("sha256").update(readFileSync("/etc/shadow")).digest("hex")).toBe(
          shadowHash,
        );
    },
    120_000,
  );

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

  describe("a self-hosted machine (POST/DELETE /v1/computers/me/self-hosted)", () => {
    const register = async (token: string) => {
      const response = await call(token, "POST", "/v1/computers/me/self-hosted");
      expect(response.status).toBe(201);
      return response;
    };
    /** `roost worker`'s worker process on "the machine": a folder of this host. */
    const startMachine = async (computerId: string, token: string) => {
      const dirs = makeComputerDirs("roost-self-hosted-");
      const worker = spawnWorker({ gatewayUrl: gw.url, token, dirs });
      await waitForWorkerProcess(gw.gateway, computerId, worker);
      return { dirs, worker };
    };

    it("registers the caller's own machine: the token is shown once, kept hashed, audited, and serves that account's computer only (SELF1)", async () => {
      const response = await register(alice);
      const body = response.json as unknown as Api.SelfHostedRegistration;
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(body.token).toMatch(/^rsw_[A-Za-z0-9_-]{43}$/);
      expect(body.serverUrl).toBe("http://localhost");
      expect(body.command).toBe(`npx roost worker --server http://localhost --token ${body.token}`);
      expect(body.rotated).toBe(false);
      const aliceComputer = await computerIdOf(alice);
      expect(body.computerId).toBe(aliceComputer);
      expect((await call(alice, "GET", "/v1/computers/me")).json).toMatchObject({
        kind: "self-hosted",
        provider: "self-hosted",
        isolated: false,
        state: "disconnected",
        connected: false,
      });
      // Bob's computer is his hosted one, and nothing about Alice's token shows anywhere.
      expect((await call(bob, "GET", "/v1/computers/me")).json).toMatchObject({ kind: "hosted" });
      expect(await store.findSelfHostedComputer(hashToken(body.token))).toBe(aliceComputer);
      expect(await auditActions(alice)).toContainEqual({
        action: "computer.self_hosted.register",
        detail: { rotated: false },
      });
      expect(JSON.stringify(await store.listAudit())).not.toContain(body.token);
      expect(JSON.stringify(await call(bob, "GET", "/v1/computers/me"))).not.toContain(body.token);

      const machine = await startMachine(aliceComputer, body.token);
      try {
        expect((await call(alice, "GET", "/v1/computers/me")).json).toMatchObject({
          kind: "self-hosted",
          state: "connected",
          connected: true,
        });
        // The files API works in the machine's workspace folder.
        expect((await upload(alice, "/workspace/from-api.txt", "on the machine")).status).toBe(201);
        expect(readFileSync(join(machine.dirs.workspace, "from-api.txt"), "utf8")).toBe(
          "on the machine",
        );
        // Bob's files are on his own computer, which knows nothing of Alice's machine.
        const bobs = await list(bob);
        expect(bobs.status).toBe(200);
        expect(JSON.stringify(bobs.json)).not.toContain("from-api.txt");
        expect(gw.gateway.isConnected(aliceComputer)).toBe(true);
      } finally {
        await machine.worker.stop();
        machine.dirs.remove();
      }
    });

    it("registering again rotates the token: the connected worker is cut off at once and the old token is refused", async () => {
      const first = (await register(alice)).json as unknown as Api.SelfHostedRegistration;
      const computerId = await computerIdOf(alice);
      const old = await rawClient(gw.url, first.token);
      expect(old.opened).toEqual({ ok: true });
      old.hello({ workerId: "wrk_machine" });
      await waitFor(() => gw.gateway.isConnected(computerId), { message: "the machine's hello" });

      const second = (await register(alice)).json as unknown as Api.SelfHostedRegistration;
      expect(second.rotated).toBe(true);
      expect(second.token).not.toBe(first.token);
      expect((await old.closed).code).toBe(4005);
      const again = await rawClient(gw.url, first.token);
      expect(again.opened).toMatchObject({ ok: false, status: 401 });
      const fresh = await rawClient(gw.url, second.token);
      expect(fresh.opened).toEqual({ ok: true });
      fresh.ws.close();
      expect(await auditActions(alice)).toContainEqual({
        action: "computer.self_hosted.rotate",
        detail: { rotated: true },
      });
    });

    it("DELETE revokes the token at once and goes back to the hosted computer; another account's DELETE touches nothing", async () => {
      const registered = (await register(alice)).json as unknown as Api.SelfHostedRegistration;
      const computerId = await computerIdOf(alice);
      const machine = await rawClient(gw.url, registered.token);
      machine.hello({ workerId: "wrk_machine" });
      await waitFor(() => gw.gateway.isConnected(computerId), { message: "the machine's hello" });

      const bobs = await call(bob, "DELETE", "/v1/computers/me/self-hosted");
      expect(bobs.status).toBe(404);
      expect(bobs.json.error?.message).toMatch(/not self-hosted; register a machine with POST/);
      expect(gw.gateway.isConnected(computerId)).toBe(true);

      const removed = await call(alice, "DELETE", "/v1/computers/me/self-hosted");
      expect(removed.status).toBe(200);
      expect(removed.json).toMatchObject({ kind: "hosted", provider: "process", state: "asleep" });
      expect((await machine.closed).code).toBe(4005);
      expect((await rawClient(gw.url, registered.token)).opened).toMatchObject({
        ok: false,
        status: 401,
      });
      expect(await store.findSelfHostedComputer(hashToken(registered.token))).toBeUndefined();
      expect(await auditActions(alice)).toContainEqual({
        action: "computer.self_hosted.remove",
        detail: {},
      });
      expect((await call(alice, "DELETE", "/v1/computers/me/self-hosted")).status).toBe(404);
      // Back on the hosted computer: a file route wakes it again, as before.
      expect((await list(alice)).status).toBe(200);
      expect(wakes).toContain(computerId);
    });

    it("a self-hosted computer neither wakes nor sleeps (409), and its files answer 503 at once while it is not connected", async () => {
      await register(alice);
      const computerId = await computerIdOf(alice);
      for (const action of ["wake", "sleep"]) {
        const response = await call(alice, "POST", `/v1/computers/me/${action}`);
        expect(response.status, action).toBe(409);
        expect(response.json.error?.message).toMatch(
          /self-hosted machine: it does not wake or sleep/,
        );
      }
      const started = Date.now();
      const listing = await list(alice);
      expect(listing.status).toBe(503);
      expect(listing.json.error).toMatchObject({
        code: "computer_unavailable",
        message:
          "your computer (a self-hosted machine) is not connected; start `roost worker` on it, then try again",
      });
      expect(Date.now() - started).toBeLessThan(5_000); // not the gateway's 60 s wait
      expect(wakes).not.toContain(computerId);
    });

    it("files on a self-hosted machine stay inside its workspace: a link out, `..` and paths elsewhere are refused, nothing outside changes", async () => {
      const registered = (await register(alice)).json as unknown as Api.SelfHostedRegistration;
      const machine = await startMachine(await computerIdOf(alice), registered.token);
      try {
        const outside = join(machine.dirs.root, "outside");
        mkdirSync(outside);
        writeFileSync(join(outside, "secret.txt"), "not for the server");
        symlinkSync(outside, join(machine.dirs.workspace, "out-link"));
        expect((await download(alice, "/workspace/out-link/secret.txt")).status).toBe(403);
        expect((await upload(alice, "/workspace/out-link/secret.txt", "planted")).status).toBe(403);
        expect((await upload(alice, "/workspace/out-link", "replaced")).status).toBe(403);
        expect((await download(alice, "/workspace/../outside/secret.txt")).status).toBe(400);
        expect((await download(alice, machine.dirs.root + "/outside/secret.txt")).status).toBe(400);
        const deleted = await call(
          alice,
          "DELETE",
          `/v1/computers/me/files?path=${q("/workspace/out-link/secret.txt")}`,
        );
        expect(deleted.status).toBe(403);
        expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("not for the server");
        expect(readdirSync(outside)).toEqual(["secret.txt"]);
      } finally {
        await machine.worker.stop();
        machine.dirs.remove();
      }
    });
  });
});
