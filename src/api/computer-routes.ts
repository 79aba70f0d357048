/**
 * `/v1/computers/me…`: the caller's computer, its state, wake and sleep, and its workspace files.
 * Files are read from the computer's durable disk on this host (every provider so far keeps it
 * here), so browsing works while the computer sleeps and never wakes it.
 */
import { createReadStream } from "node:fs";
import { lstat, mkdir, readdir, realpath, rename, stat, writeFile, chown } from "node:fs/promises";
import { basename, dirname, join, posix, relative, sep } from "node:path";
import { Readable } from "node:stream";
import type { Hono } from "hono";
import { z } from "zod";
import { NotFoundError, RoostError } from "../errors/index.ts";
import type { Account } from "../store/index.ts";
import { readJson, readQuery, underField } from "./validation.ts";

export interface ComputerStatusView {
  id: string;
  state: string;
  lastActiveAt: number | null;
  holders: number;
  failure: string | null;
}

/** What the computer routes need from the platform. */
export interface ComputerService {
  forAccount(accountId: string): Promise<{ id: string; provider: string; isolated: boolean }>;
  status(computerId: string): Promise<ComputerStatusView>;
  wake(computerId: string, accountId: string): Promise<ComputerStatusView>;
  /** Sleeps unless a turn holds the computer; answers with the state after. */
  sleep(computerId: string): Promise<ComputerStatusView>;
  /** The host folder behind /workspace. */
  workspaceDir(computerId: string): string;
  networkPolicy(computerId: string): Promise<unknown>;
  /** Validates, stores and applies the policy; throws an `invalid_request` RoostError saying what is wrong. */
  setNetworkPolicy(computerId: string, accountId: string, policy: unknown): Promise<unknown>;
  /** Whether this server's provider actually enforces the policy (the `process` provider does not). */
  egressEnforced: boolean;
}

/** Largest upload through the files API. */
export const maxUploadBytes = 25 * 1024 * 1024;

const pathQuery = z.strictObject({ path: z.string().min(1).max(4096).optional() });

export function registerComputerRoutes(
  app: Hono<{ Variables: { account: Account } }>,
  computers: ComputerService,
) {
  const view = async (accountId: string) => {
    const computer = await computers.forAccount(accountId);
    const status = await computers.status(computer.id);
    return {
      id: computer.id,
      provider: computer.provider,
      isolated: computer.isolated,
      state: status.state,
      lastActiveAt:
        status.lastActiveAt === null ? null : new Date(status.lastActiveAt).toISOString(),
      heldByTurns: status.holders,
      failure: status.failure,
    };
  };

  app.get("/v1/computers/me", async (context) =>
    context.json(await view(context.get("account").id)),
  );

  app.post("/v1/computers/me/wake", async (context) => {
    const account = context.get("account");
    const computer = await computers.forAccount(account.id);
    await computers.wake(computer.id, account.id);
    return context.json(await view(account.id));
  });

  app.post("/v1/computers/me/sleep", async (context) => {
    const account = context.get("account");
    const computer = await computers.forAccount(account.id);
    const status = await computers.sleep(computer.id);
    if (status.state === "awake" && status.holders > 0) {
      throw new RoostError(
        "conflict",
        "a bot is using the computer right now; it sleeps when the turn ends and the computer is idle",
      );
    }
    return context.json(await view(account.id));
  });

  app.get("/v1/computers/me/network-policy", async (context) => {
    const computer = await computers.forAccount(context.get("account").id);
    return context.json({
      policy: await computers.networkPolicy(computer.id),
      enforced: computers.egressEnforced,
    });
  });

  app.put("/v1/computers/me/network-policy", async (context) => {
    const account = context.get("account");
    const computer = await computers.forAccount(account.id);
    const body = await readJson(context, z.strictObject({ policy: z.unknown() }));
    // The egress validator's issues are about the body's `policy` field: say so, in the one shape.
    const policy = await computers
      .setNetworkPolicy(computer.id, account.id, body.policy)
      .catch((error: unknown) => {
        throw underField(error, "policy");
      });
    return context.json({ policy, enforced: computers.egressEnforced });
  });

  /** Maps `/workspace/a/b` (or `a/b`) to the host folder, refusing anything that escapes it. */
  async function resolveWorkspacePath(accountId: string, requested: string | undefined) {
    const computer = await computers.forAccount(accountId);
    const root = computers.workspaceDir(computer.id);
    await mkdir(root, { recursive: true });
    const relativePath = (requested ?? "/workspace").replace(/^\/?workspace(\/|$)/, "");
    if (relativePath.split("/").includes("..")) {
      throw new RoostError(
        "invalid_request",
        "path must stay inside /workspace (no `..` segments)",
      );
    }
    const normalized = posix.normalize(`/${relativePath}`);
    const hostPath = join(root, normalized);
    // Symlinks inside the workspace may point anywhere: resolve what exists and check again.
    const real = await realpath(hostPath).catch(() => undefined);
    const realRoot = await realpath(root);
    const check = real ?? (await realpath(dirname(hostPath)).catch(() => undefined));
    if (check !== undefined && check !== realRoot && !check.startsWith(realRoot + sep)) {
      throw new RoostError("forbidden", "that path leads outside /workspace (through a symlink)");
    }
    return { hostPath, display: posix.join("/workspace", normalized), root };
  }

  app.get("/v1/computers/me/files", async (context) => {
    const query = readQuery(context, pathQuery);
    const { hostPath, display } = await resolveWorkspacePath(context.get("account").id, query.path);
    const info = await stat(hostPath).catch(() => undefined);
    if (info === undefined) throw new NotFoundError("file", display);
    if (!info.isDirectory())
      throw new RoostError(
        "invalid_request",
        `${display} is a file; download it from /v1/computers/me/files/content`,
      );
    const names = await readdir(hostPath);
    const entries = await Promise.all(
      names.map(async (name) => {
        const entry = await lstat(join(hostPath, name)).catch(() => undefined);
        return {
          name,
          type:
            entry === undefined
              ? "file"
              : entry.isDirectory()
                ? "dir"
                : entry.isSymbolicLink()
                  ? "symlink"
                  : "file",
          size: entry?.size ?? 0,
          modifiedAt: entry === undefined ? null : entry.mtime.toISOString(),
        };
      }),
    );
    entries.sort((a, b) =>
      a.type === b.type ? a.name.localeCompare(b.name) : a.type === "dir" ? -1 : 1,
    );
    return context.json({ path: display, entries });
  });

  app.get("/v1/computers/me/files/content", async (context) => {
    const query = readQuery(context, pathQuery);
    const { hostPath, display } = await resolveWorkspacePath(context.get("account").id, query.path);
    const info = await stat(hostPath).catch(() => undefined);
    if (info === undefined) throw new NotFoundError("file", display);
    if (!info.isFile()) throw new RoostError("invalid_request", `${display} is not a file`);
    const body = Readable.toWeb(createReadStream(hostPath)) as ReadableStream;
    return new Response(body, {
      headers: {
        "content-type": "application/octet-stream",
        "content-length": String(info.size),
        "content-disposition": `attachment; filename="${basename(hostPath).replace(/["\\]/g, "_")}"`,
      },
    });
  });

  app.put("/v1/computers/me/files/content", async (context) => {
    const query = readQuery(context, pathQuery);
    if (query.path === undefined)
      throw new RoostError("invalid_request", "say where to put the file: ?path=/workspace/name");
    const { hostPath, display, root } = await resolveWorkspacePath(
      context.get("account").id,
      query.path,
    );
    if (relative(root, hostPath) === "")
      throw new RoostError("invalid_request", "path must name a file inside /workspace");
    const body = new Uint8Array(await context.req.arrayBuffer());
    if (body.byteLength > maxUploadBytes)
      throw new RoostError("payload_too_large", `uploads are limited to ${maxUploadBytes} bytes`);
    const existing = await stat(hostPath).catch(() => undefined);
    if (existing?.isDirectory() === true)
      throw new RoostError("conflict", `${display} is a directory`);
    await mkdir(dirname(hostPath), { recursive: true });
    // Files belong to the computer's user, whoever the server runs as.
    const owner = await stat(root);
    const temporary = `${hostPath}.upload-${process.pid}-${Date.now()}`;
    await writeFile(temporary, body);
    await chown(temporary, owner.uid, owner.gid).catch(() => undefined);
    await rename(temporary, hostPath);
    return context.json(
      { path: display, size: body.byteLength, created: existing === undefined },
      201,
    );
  });
}
