/** The skills routes (skills-routes.ts, SKAPI1–SKAPI3): the library, bad input, other accounts. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { createEventHub } from "../events/index.ts";
import type { Api } from "../protocol/index.ts";
import { createSkillService } from "../skills/index.ts";
import { skillMarkdown, tarArchive, zipArchive } from "../skills/testing/archives.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";

let dir: string;
let store: Store;
let app: ReturnType<typeof createApi>;
let alice: { id: string; token: string };
let bob: { id: string; token: string };

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-skills-api-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  app = createApi({
    store,
    events: createEventHub(),
    kick: async () => undefined,
    interrupt: () => false,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: () => undefined,
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 1024 * 1024,
    skills: createSkillService(store),
  });
  const account = async (name: string) => {
    const created = await store.createAccount({ name, isAdmin: false });
    return { id: created.id, token: (await issueApiToken(store, created.id, "t")).token };
  };
  alice = await account("alice");
  bob = await account("bob");
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

interface Answer<T> {
  status: number;
  body: T & { error?: { code: string; message: string; details?: { issues?: unknown[] } } };
  headers: Headers;
}

async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  body?: unknown,
  options: { token?: string; contentType?: string } = {},
): Promise<Answer<T>> {
  const raw = body instanceof Uint8Array;
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${options.token ?? alice.token}`,
      ...(body === undefined
        ? {}
        : {
            "content-type": options.contentType ?? (raw ? "application/x-tar" : "application/json"),
          }),
    },
    ...(body === undefined ? {} : { body: raw ? body : JSON.stringify(body) }),
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const text = Buffer.from(bytes).toString("utf8");
  const json = response.headers.get("content-type")?.includes("json") === true;
  return {
    status: response.status,
    body: (json && text !== "" ? JSON.parse(text) : { bytes }) as never,
    headers: response.headers,
  };
}

const create = (name: string, token = alice.token) =>
  call<Api.SkillDetail>(
    "POST",
    "/v1/skills",
    { name, description: `${name} in one line`, body: `# ${name}\nSteps.` },
    { token },
  );

describe("skills routes", () => {
  it("creates, lists, reads, edits and deletes a skill, auditing each write (SKAPI2)", async () => {
    const created = await create("weekly-report");
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "weekly-report",
      description: "weekly-report in one line",
      body: "# weekly-report\nSteps.",
      fileCount: 1,
      files: [{ path: "SKILL.md", executable: false }],
    });
    const list = await call<Api.SkillList>("GET", "/v1/skills");
    expect(list.body.skills.map((skill) => skill.name)).toEqual(["weekly-report"]);
    expect(list.body.limits).toMatchObject({ maxSkills: 200, maxSkillBytes: 5 * 1024 * 1024 });

    const patched = await call<Api.SkillDetail>("PATCH", "/v1/skills/weekly-report", {
      description: "Writes the weekly report",
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      description: "Writes the weekly report",
      body: "# weekly-report\nSteps.",
    });
    expect(patched.body.digest).not.toBe(created.body.digest);
    const document = await call<{ bytes: Uint8Array }>(
      "GET",
      "/v1/skills/weekly-report/files/SKILL.md",
    );
    expect(document.status).toBe(200);
    expect(document.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Buffer.from(document.body.bytes).toString("utf8")).toContain(
      "description: Writes the weekly report",
    );

    expect((await call("DELETE", "/v1/skills/weekly-report")).status).toBe(204);
    expect((await call("GET", "/v1/skills/weekly-report")).status).toBe(404);
    const audit = await store.listAudit({ accountId: alice.id });
    expect(
      audit.filter((entry) => entry.action.startsWith("skill.")).map((entry) => entry.action),
    ).toEqual(["skill.delete", "skill.update", "skill.create"]);
  });

  it("uploads a folder as tar.gz or zip (POST creates, PUT …/archive creates or replaces)", async () => {
    const tgz = gzipSync(
      tarArchive([
        { path: "report/", type: "5" },
        { path: "report/SKILL.md", data: skillMarkdown("report", "Reports") },
        { path: "report/bin/run.sh", data: "echo report", mode: 0o755 },
        { path: "report/templates/a b.txt", data: "template" },
      ]),
    );
    const posted = await call<Api.SkillDetail>("POST", "/v1/skills", tgz, {
      contentType: "application/gzip",
    });
    expect(posted.status).toBe(201);
    expect(posted.body.files.map((file) => [file.path, file.executable])).toEqual([
      ["SKILL.md", false],
      ["bin/run.sh", true],
      ["templates/a b.txt", false],
    ]);
    const file = await call<{ bytes: Uint8Array }>(
      "GET",
      `/v1/skills/report/files/templates/${encodeURIComponent("a b.txt")}`,
    );
    expect(Buffer.from(file.body.bytes).toString("utf8")).toBe("template");
    expect(
      (await call("POST", "/v1/skills", tgz, { contentType: "application/gzip" })).status,
    ).toBe(409);

    const zip = zipArchive([{ path: "SKILL.md", data: skillMarkdown("report", "Zipped now") }]);
    const replaced = await call<Api.SkillDetail>("PUT", "/v1/skills/report/archive", zip, {
      contentType: "application/zip",
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ description: "Zipped now", fileCount: 1 });
    const fresh = await call(
      "PUT",
      "/v1/skills/fresh/archive",
      tarArchive([{ path: "SKILL.md", data: skillMarkdown("fresh", "New") }]),
    );
    expect(fresh.status).toBe(201);
  });

  it("bad input is a 4xx that says how to fix it, and nothing is stored", async () => {
    const expectRefused = async (
      answer: Promise<Answer<unknown>>,
      status: number,
      pattern: RegExp,
    ) => {
      const { status: got, body } = await answer;
      expect(got).toBe(status);
      expect(body.error?.message).toMatch(pattern);
    };
    await expectRefused(
      call("POST", "/v1/skills", "name=x", { contentType: "text/plain" }),
      415,
      /JSON \{name, description, body\}, or .*application\/zip/,
    );
    await expectRefused(
      call("POST", "/v1/skills", { name: "x", description: "d", body: "b", extra: 1 }),
      400,
      /unknown field "extra"/,
    );
    await expectRefused(
      call("POST", "/v1/skills", { name: "Bad Name", description: "d", body: "b" }),
      400,
      /1–64 lowercase letters, digits and dashes/,
    );
    await expectRefused(
      call("POST", "/v1/skills", { name: "x", description: "two\nlines", body: "b" }),
      400,
      /one line/,
    );
    await expectRefused(
      call("POST", "/v1/skills", { name: "x", description: "d" }),
      400,
      /body is required/,
    );
    await create("exists");
    await expectRefused(
      call("PATCH", "/v1/skills/exists", {}),
      400,
      /send description, body or both/,
    );
    await expectRefused(
      call("PATCH", "/v1/skills/exists", { name: "renamed" }),
      400,
      /unknown field "name"/,
    );
    await expectRefused(
      call("PUT", "/v1/skills/exists/archive", { name: "x" }),
      415,
      /as an archive/,
    );
    await expectRefused(
      call(
        "PUT",
        "/v1/skills/other/archive",
        tarArchive([{ path: "SKILL.md", data: skillMarkdown("exists", "mismatch") }]),
      ),
      400,
      /names the skill "exists", but the address names "other"/,
    );
    await expectRefused(
      call(
        "POST",
        "/v1/skills",
        tarArchive([
          { path: "SKILL.md", data: skillMarkdown("evil", "climbs out") },
          { path: "../../etc/cron.d/evil", data: "* * * * * root sh" },
        ]),
      ),
      400,
      /`\.\.` component/,
    );
    await expectRefused(
      call("POST", "/v1/skills", new Uint8Array(6 * 1024 * 1024 + 1)),
      413,
      /at most 6291456 bytes/,
    );
    await expectRefused(
      call("GET", "/v1/skills/exists/files/..%2F..%2Fetc"),
      400,
      /`\.\.` component/,
    );
    await expectRefused(
      call("GET", "/v1/skills/exists/files/nope.txt"),
      404,
      /has no file "nope.txt"/,
    );
    await expectRefused(call("GET", "/v1/skills?limit=3"), 400, /unknown query parameter "limit"/);
    await expectRefused(
      call("DELETE", "/v1/skills/exists", { please: true }),
      400,
      /takes no body/,
    );
    expect(
      (await call<Api.SkillList>("GET", "/v1/skills")).body.skills.map((skill) => skill.name),
    ).toEqual(["exists"]);
  });

  it("another account's skill answers 404 like a missing one, for every route (SKAPI1)", async () => {
    await create("private");
    const asBob = { token: bob.token };
    const missing = await call("GET", "/v1/skills/never-was", undefined, asBob);
    expect(missing.status).toBe(404);
    for (const [method, path, body] of [
      ["GET", "/v1/skills/private", undefined],
      ["GET", "/v1/skills/private/files/SKILL.md", undefined],
      ["PATCH", "/v1/skills/private", { body: "taken over" }],
      ["DELETE", "/v1/skills/private", undefined],
    ] as const) {
      const answer = await call(method, path, body, asBob);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.body.error?.code).toBe("not_found");
    }
    expect((await call<Api.SkillList>("GET", "/v1/skills", undefined, asBob)).body.skills).toEqual(
      [],
    );
    // Bob's own skill of the same name is his, and leaves Alice's alone.
    const own = await call(
      "PUT",
      "/v1/skills/private/archive",
      tarArchive([{ path: "SKILL.md", data: skillMarkdown("private", "Bob's") }]),
      asBob,
    );
    expect(own.status).toBe(201);
    const hers = await call<Api.SkillDetail>("GET", "/v1/skills/private");
    expect(hers.body).toMatchObject({
      description: "private in one line",
      body: "# private\nSteps.",
    });
    expect((await store.listAudit({ accountId: bob.id })).map((entry) => entry.action)).toEqual([
      "skill.create",
    ]);
  });
});
