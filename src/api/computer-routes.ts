/**
 * `/v1/computers/me…`: the caller's computer, its state, wake and sleep, its network policy, the
 * files under its /workspace, and the switch to a self-hosted machine and back.
 *
 * Files: every operation is a call to the computer's own worker through the gateway
 * (computer-files.ts), run there as the computer's user; the server never opens a path on a
 * computer's disk. The worker is needed, so a file route wakes a sleeping computer first.
 *
 * Invariants:
 *   FILES1 A path is accepted only inside /workspace (`/workspace/...` or relative to it); `..`,
 *          NUL and absolute paths elsewhere are refused with 400 before anything is sent.
 *   FILES2 Each route acts only on the caller's own computer (forAccount): another account's
 *          files are as unreachable as files that do not exist.
 *   FILES3 Every change (upload, delete, rename, mkdir) is audited once it succeeded.
 *   FILES4 A file name reaches a response header only through attachmentDisposition.
 *   SELF1 A self-hosted worker token is shown once, in the answer to the POST that made it, and
 *         only to its own account (the routes act on the caller's computer only); the server
 *         keeps its hash. Registering again replaces it; both changes are audited.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { generateSelfHostedToken, hashToken } from "../auth/index.ts";
import { InvalidRequestError, RoostError } from "../errors/index.ts";
import { displayWorkspacePath, fileLimits, workspacePathProblem } from "../protocol/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Account, Store } from "../store/index.ts";
import type { FilesClient } from "./computer-files.ts";
import { attachmentDisposition } from "./content-disposition.ts";
import { defaultListingPage, maxListingPage, pageListing } from "./listing-pages.ts";
import { queryInteger, readJson, readQuery, text, underField } from "./validation.ts";

export interface ComputerStatusView {
  id: string;
  /** @default "hosted" */
  kind?: Api.ComputerKind;
  state: string;
  lastActiveAt: number | null;
  holders: number;
  failure: string | null;
  /** The node that runs it and holds its disk (decision 0040). */
  home?: string | null;
}

/** What the computer routes need from the platform. */
export interface ComputerService {
  forAccount(accountId: string): Promise<{
    id: string;
    provider: string;
    isolated: boolean;
    /** How the provider isolates it: `full`, `unprivileged` (local without root) or `none`. */
    isolation?: Api.ComputerIsolation;
    /** @default "hosted" */
    kind?: Api.ComputerKind;
  }>;
  /** Whether the computer's worker is connected to this server now. */
  /** Whether its worker is connected (to this node, or to the one calls are forwarded to). */
  isConnected(computerId: string): boolean | Promise<boolean>;
  /**
   * SECR13: redacts the account's secrets from a downloaded file's bytes (undefined: none to
   * redact; the download then keeps its length). @default no redaction
   */
  fileRedaction?(accountId: string): Promise<TransformStream<Uint8Array, Uint8Array> | undefined>;
  /** The account's own machine becomes its computer, with this worker token's hash (C8). */
  useSelfHosted(
    computerId: string,
    accountId: string,
    tokenHash: string,
  ): Promise<{ rotated: boolean }>;
  /** Back to the hosted computer; revokes the machine's token. `changed: false`: it was hosted. */
  useHosted(computerId: string, accountId: string): Promise<{ changed: boolean }>;
  /** The URL a self-hosted worker is told to use; the request's own origin when unset. */
  publicUrl?: string;
  status(computerId: string): Promise<ComputerStatusView>;
  wake(computerId: string, accountId: string): Promise<ComputerStatusView>;
  /** Sleeps unless a turn holds the computer; answers with the state after. */
  sleep(computerId: string): Promise<ComputerStatusView>;
  /** File operations on the computer's worker (computer-files.ts, built on the gateway). */
  files: FilesClient;
  networkPolicy(computerId: string): Promise<unknown>;
  /** Validates, stores and applies the policy; throws an `invalid_request` RoostError saying what is wrong. */
  setNetworkPolicy(computerId: string, accountId: string, policy: unknown): Promise<unknown>;
  /** Whether this server's provider actually enforces the policy (the `process` provider does not). */
  egressEnforced: boolean;
}

/** Largest upload through the files API (25 MiB, the attachment limit). */
export const maxUploadBytes = fileLimits.maxUploadBytes;

const pathParameter = z.string({ error: "path must be a string" }).max(fileLimits.maxPathLength, {
  error: `path must be at most ${fileLimits.maxPathLength} characters`,
});
const listQuery = z.strictObject({
  path: pathParameter.optional(),
  // Pages (listing-pages.ts): without `limit`, the whole listing as before.
  limit: queryInteger("limit", { min: 1, max: maxListingPage }).optional(),
  cursor: z.string().max(2000, { error: "cursor is too long" }).optional(),
});
const fileQuery = z.strictObject({
  path: pathParameter.min(1, { error: "path must not be empty" }).optional(),
});
const deleteQuery = z.strictObject({
  path: pathParameter.min(1, { error: "path must not be empty" }).optional(),
  recursive: z.enum(["true", "false"], { error: "recursive must be true or false" }).optional(),
});
const renameBody = z.strictObject({
  from: text("from", { min: 1, max: fileLimits.maxPathLength }),
  to: text("to", { min: 1, max: fileLimits.maxPathLength }),
});
const mkdirBody = z.strictObject({ path: text("path", { min: 1, max: fileLimits.maxPathLength }) });

const insideWorkspace =
  "paths must be inside /workspace (give /workspace/… or a path relative to /workspace)";

/**
 * FILES1: the wire path (relative to /workspace) for what a client sent. Empty and `.`
 * components are dropped; `..`, NUL and anything outside /workspace are refused.
 */
export function parseWorkspacePath(raw: string, field = "path"): string {
  if (raw.includes("\0"))
    throw new InvalidRequestError(`${field} contains a NUL byte; ${insideWorkspace}`);
  let rest = raw;
  if (raw.startsWith("/")) {
    if (raw !== "/workspace" && !raw.startsWith("/workspace/")) {
      throw new InvalidRequestError(
        `${field} ${JSON.stringify(raw)} is outside /workspace; ${insideWorkspace}`,
      );
    }
    rest = raw.slice("/workspace".length);
  }
  const parts = rest.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.includes("..")) {
    throw new InvalidRequestError(`${field} may not contain \`..\` segments; ${insideWorkspace}`);
  }
  const path = parts.join("/");
  const problem = workspacePathProblem(path);
  if (problem !== undefined) throw new InvalidRequestError(`${field}: ${problem}`);
  return path;
}

/** A query parameter given twice is ambiguous: refuse it rather than pick one. */
function refuseRepeated(context: Context): void {
  for (const [name, values] of Object.entries(context.req.queries())) {
    if (values.length > 1)
      throw new InvalidRequestError(
        `query parameter ${JSON.stringify(name)} is given ${values.length} times; give it once`,
      );
  }
}

export function registerComputerRoutes(
  app: Hono<{ Variables: { account: Account } }>,
  computers: ComputerService,
  store: Store,
) {
  const view = async (accountId: string) => {
    const computer = await computers.forAccount(accountId);
    const status = await computers.status(computer.id);
    // The control plane's answer wins: it changes the kind in the same handler as the store (C8).
    const kind = status.kind ?? computer.kind ?? "hosted";
    const selfHosted = kind === "self-hosted";
    return {
      id: computer.id,
      kind,
      provider: selfHosted ? "self-hosted" : computer.provider,
      isolated: selfHosted ? false : computer.isolated,
      // A self-hosted machine is the user's own: Roost isolates nothing there.
      isolation: selfHosted
        ? "none"
        : (computer.isolation ?? (computer.isolated ? "full" : "none")),
      state: status.state,
      connected: await computers.isConnected(computer.id),
      lastActiveAt:
        status.lastActiveAt === null ? null : new Date(status.lastActiveAt).toISOString(),
      heldByTurns: status.holders,
      failure: status.failure,
      home: status.home ?? null,
    };
  };

  const selfHostedNoLifecycle = () =>
    new RoostError(
      "conflict",
      "your computer is a self-hosted machine: it does not wake or sleep (start or stop `roost worker` on it; DELETE /v1/computers/me/self-hosted goes back to the hosted computer)",
    );

  app.get("/v1/computers/me", async (context) =>
    context.json(await view(context.get("account").id)),
  );

  app.post("/v1/computers/me/wake", async (context) => {
    const account = context.get("account");
    const computer = await computers.forAccount(account.id);
    if (computer.kind === "self-hosted") throw selfHostedNoLifecycle();
    await computers.wake(computer.id, account.id);
    return context.json(await view(account.id));
  });

  app.post("/v1/computers/me/sleep", async (context) => {
    const account = context.get("account");
    const computer = await computers.forAccount(account.id);
    if (computer.kind === "self-hosted") throw selfHostedNoLifecycle();
    const status = await computers.sleep(computer.id);
    if (status.state === "awake" && status.holders > 0) {
      throw new RoostError(
        "conflict",
        "a bot is using the computer right now; it sleeps when the turn ends and the computer is idle",
      );
    }
    return context.json(await view(account.id));
  });

  app.post("/v1/computers/me/self-hosted", async (context) => {
    const account = context.get("account");
    const computer = await computers.forAccount(account.id); // SELF1: the caller's own
    const token = generateSelfHostedToken();
    const { rotated } = await computers.useSelfHosted(computer.id, account.id, hashToken(token));
    await store.audit({
      accountId: account.id,
      action: rotated ? "computer.self_hosted.rotate" : "computer.self_hosted.register",
      target: computer.id,
      detail: { rotated },
    }); // SELF1
    const serverUrl = (computers.publicUrl ?? new URL(context.req.url).origin).replace(/\/+$/, "");
    const body: Api.SelfHostedRegistration = {
      computerId: computer.id,
      token,
      serverUrl,
      command: `npx roost worker --server ${serverUrl} --token ${token}`,
      rotated,
    };
    context.header("cache-control", "no-store");
    return context.json(body, 201);
  });

  app.delete("/v1/computers/me/self-hosted", async (context) => {
    const account = context.get("account");
    const computer = await computers.forAccount(account.id);
    const { changed } = await computers.useHosted(computer.id, account.id);
    if (!changed) {
      throw new RoostError(
        "not_found",
        "your computer is not self-hosted; register a machine with POST /v1/computers/me/self-hosted",
        { details: { kind: "self-hosted computer", id: computer.id } },
      );
    }
    await store.audit({
      accountId: account.id,
      action: "computer.self_hosted.remove",
      target: computer.id,
      detail: {},
    }); // SELF1
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

  /** The caller's computer, awake: file operations need its worker (docs/api.md, waking). */
  const awakeComputer = async (account: Account): Promise<string> => {
    const computer = await computers.forAccount(account.id); // FILES2
    if (computer.kind === "self-hosted") {
      // Nothing to wake (C7); without its worker there is nobody to ask, so say so at once.
      if (!(await computers.isConnected(computer.id)))
        throw new RoostError(
          "computer_unavailable",
          "your computer (a self-hosted machine) is not connected; start `roost worker` on it, then try again",
          { details: { computerId: computer.id } },
        );
      return computer.id;
    }
    await computers.wake(computer.id, account.id);
    return computer.id;
  };
  const requirePath = (path: string | undefined, example: string): string => {
    if (path === undefined) throw new InvalidRequestError(`say which file: ?path=${example}`);
    return parseWorkspacePath(path);
  };
  const audit = (
    account: Account,
    computerId: string,
    action: string,
    detail: Record<string, unknown>,
  ) =>
    store.audit({
      accountId: account.id,
      action: `computer.files.${action}`,
      target: computerId,
      detail,
    }); // FILES3

  app.get("/v1/computers/me/files", async (context) => {
    refuseRepeated(context);
    const query = readQuery(context, listQuery);
    const path = parseWorkspacePath(query.path ?? "/workspace");
    const computerId = await awakeComputer(context.get("account"));
    const listing = await computers.files
      .list(computerId, path, context.req.raw.signal)
      .catch((error: unknown) => {
        // The folder asked for is a file (not some folder on the way to it): say how to get it.
        if (
          error instanceof RoostError &&
          error.details?.reason === "not_a_directory" &&
          error.message === `${displayWorkspacePath(path)} is not a folder`
        ) {
          throw new InvalidRequestError(
            `${displayWorkspacePath(path)} is not a folder; download a file with GET /v1/computers/me/files/content?path=${displayWorkspacePath(path)}`,
          );
        }
        throw error;
      });
    const paged =
      query.limit === undefined && query.cursor === undefined
        ? { entries: listing.entries }
        : pageListing(listing.entries, {
            limit: query.limit ?? defaultListingPage,
            cursor: query.cursor,
          }); // LPG1
    const view: Api.Listing = {
      path: displayWorkspacePath(listing.path),
      ...(paged.nextCursor === undefined ? {} : { nextCursor: paged.nextCursor }),
      entries: paged.entries.map((entry) => ({
        name: entry.name,
        type: entry.type,
        size: entry.size,
        modifiedAt: new Date(entry.modifiedAt).toISOString(),
        ...(entry.target === undefined ? {} : { target: entry.target }),
      })),
      truncated: listing.truncated,
    };
    return context.json(view);
  });

  app.get("/v1/computers/me/files/content", async (context) => {
    refuseRepeated(context);
    const query = readQuery(context, fileQuery);
    const path = requirePath(query.path, "/workspace/name");
    if (path === "")
      throw new InvalidRequestError(
        "/workspace is a folder; list it with GET /v1/computers/me/files",
      );
    const computerId = await awakeComputer(context.get("account"));
    const redaction = await computers.fileRedaction?.(context.get("account").id);
    const download = await computers.files.download(computerId, path, context.req.raw.signal);
    const name = path.slice(path.lastIndexOf("/") + 1);
    return new Response(
      redaction === undefined ? download.body : download.body.pipeThrough(redaction),
      {
        headers: {
          "content-type": "application/octet-stream",
          // SECR13: a redacted file's length is known only at its end.
          ...(redaction === undefined ? { "content-length": String(download.size) } : {}),
          "content-disposition": attachmentDisposition(name), // FILES4
          "last-modified": new Date(download.modifiedAt).toUTCString(),
          "cache-control": "private, no-store",
          "x-content-type-options": "nosniff",
        },
      },
    );
  });

  app.put("/v1/computers/me/files/content", async (context) => {
    refuseRepeated(context);
    const query = readQuery(context, fileQuery);
    const path = requirePath(query.path, "/workspace/name");
    if (path === "")
      throw new InvalidRequestError(
        "path must name a file inside /workspace, not /workspace itself",
      );
    const account = context.get("account");
    const computerId = await awakeComputer(account);
    const uploaded = await computers.files.upload(
      computerId,
      path,
      context.req.raw.body,
      context.req.raw.signal,
    );
    await audit(account, computerId, "upload", {
      path: displayWorkspacePath(path),
      size: uploaded.size,
      created: uploaded.created,
    });
    const view: Api.FileUploaded = {
      path: displayWorkspacePath(uploaded.path),
      size: uploaded.size,
      created: uploaded.created,
    };
    return context.json(view, 201);
  });

  app.delete("/v1/computers/me/files", async (context) => {
    refuseRepeated(context);
    const query = readQuery(context, deleteQuery);
    const path = requirePath(
      query.path,
      "/workspace/name (add &recursive=true for a folder that is not empty)",
    );
    if (path === "")
      throw new InvalidRequestError("/workspace itself cannot be deleted; delete what is in it");
    const account = context.get("account");
    const computerId = await awakeComputer(account);
    const deleted = await computers.files
      .delete(computerId, path, query.recursive === "true", context.req.raw.signal)
      .catch((error: unknown) => {
        if (error instanceof RoostError && error.details?.reason === "not_empty") {
          throw new RoostError(
            "conflict",
            `${displayWorkspacePath(path)} is a folder that is not empty; to delete it with everything in it, add &recursive=true`,
            { details: error.details },
          );
        }
        throw error;
      });
    await audit(account, computerId, "delete", {
      path: displayWorkspacePath(path),
      type: deleted.type,
      recursive: query.recursive === "true",
    });
    const view: Api.FileDeleted = { path: displayWorkspacePath(deleted.path), type: deleted.type };
    return context.json(view);
  });

  app.post("/v1/computers/me/files/rename", async (context) => {
    refuseRepeated(context);
    const body = await readJson(context, renameBody);
    const from = parseWorkspacePath(body.from, "from");
    const to = parseWorkspacePath(body.to, "to");
    if (from === "" || to === "")
      throw new InvalidRequestError(
        "/workspace itself cannot be renamed or replaced; name something inside it",
      );
    const account = context.get("account");
    const computerId = await awakeComputer(account);
    const renamed = await computers.files.rename(computerId, from, to, context.req.raw.signal);
    await audit(account, computerId, "rename", {
      from: displayWorkspacePath(from),
      to: displayWorkspacePath(to),
      type: renamed.type,
    });
    const view: Api.FileRenamed = {
      from: displayWorkspacePath(renamed.from),
      to: displayWorkspacePath(renamed.to),
      type: renamed.type,
    };
    return context.json(view);
  });

  app.post("/v1/computers/me/files/mkdir", async (context) => {
    refuseRepeated(context);
    const body = await readJson(context, mkdirBody);
    const path = parseWorkspacePath(body.path);
    const account = context.get("account");
    const computerId = await awakeComputer(account);
    const made = await computers.files.mkdir(computerId, path, context.req.raw.signal);
    if (made.created)
      await audit(account, computerId, "mkdir", { path: displayWorkspacePath(path) });
    const view: Api.FolderMade = { path: displayWorkspacePath(made.path), created: made.created };
    return context.json(view, made.created ? 201 : 200);
  });
}
