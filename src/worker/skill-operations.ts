/**
 * The skill operations (protocol/skills.ts, docs/worker-protocol.md "Skill operations"): keep
 * `~/skills/<name>/` in the home folder of the computer's user equal to the account's skills.
 * Separate from the file operations, which are confined to the workspace: these are confined to
 * `~/skills`, and the worker runs them as the computer's own user.
 *
 * Invariants:
 *   SKW1 everything happens below `~/skills`, walked without following a link (workspace-fs.ts
 *        WFS1–WFS4 from an fd on it); `~/skills` itself is opened no-follow in the home folder,
 *        so a link put there is refused, never followed.
 *   SKW2 a skill's folder appears whole: it is written into a fresh hidden stage folder, checked
 *        against its digest, fsync'd, then renamed into place; the old folder leaves by a rename
 *        too, and is removed after.
 *   SKW3 only folders this worker wrote (recorded in `~/skills/.roost-skills.json`) are ever
 *        removed, and only when the account no longer lists that skill.
 *   SKW4 one skill operation runs at a time per worker, and each is idempotent: a repeated put
 *        of a digest already in place writes nothing, a repeated sync finds nothing to do.
 *   SKW5 what an interrupted put left (stage and trash folders) is removed by the next operation.
 */
import { nodeCrypto, randomBytes } from "./light-crypto.ts";
import { constants, promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import {
  decodeChunk,
  isSkillName,
  skillDigest,
  skillInternalNames,
  skillLimits,
  skillOperationInputSchemas,
} from "../protocol/index.ts";
import type {
  SkillOperationInput,
  SkillOperationName,
  SkillOperationOutput,
  ToolError,
} from "../protocol/index.ts";
import { isErrno } from "./fs-atomic.ts";
import {
  at,
  FileOperationFailure,
  lstatAt,
  openFileAt,
  openWorkspaceRoot,
  removeTree,
  syncFolder,
  toFileFailure,
} from "./workspace-fs.ts";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

export interface SkillOperationsOptions {
  /** The computer user's home folder; skills live in `<home>/skills`. */
  home: string;
  /** fsync what is written. @default true */
  fsync?: boolean;
  log?: (line: string) => void;
}

export interface SkillOperationCall {
  callId: string;
  tool: SkillOperationName;
  input: unknown;
  signal: AbortSignal;
}

export type SkillOperationOutcome = { ok: true; output: unknown } | { ok: false; error: ToolError };

export interface SkillOperations {
  run(call: SkillOperationCall): Promise<SkillOperationOutcome>;
}

interface SkillState {
  /** Skill name → the digest of the folder this worker put there. */
  skills: Record<string, string>;
}

const display = (name?: string) => (name === undefined ? "~/skills" : `~/skills/${name}`);

export function createSkillOperations(options: SkillOperationsOptions): SkillOperations {
  const durable = options.fsync ?? true;
  const log = options.log ?? (() => undefined);
  let queue: Promise<unknown> = Promise.resolve();
  // SKW4: one at a time.
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work);
    queue = next.catch(() => undefined);
    return next;
  };

  /** SKW1: `~/skills`, created when missing, never through a link. */
  async function openSkillsFolder(): Promise<FileHandle> {
    const home = await openWorkspaceRoot(options.home);
    try {
      const open = () =>
        fs.open(at(home, "skills"), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK);
      try {
        return await open();
      } catch (error) {
        if (isErrno(error, "ENOENT")) {
          await fs.mkdir(at(home, "skills"), 0o755).catch((mkdirError: unknown) => {
            if (!isErrno(mkdirError, "EEXIST")) throw mkdirError;
          });
          return await open();
        }
        if (isErrno(error, "ELOOP") || isErrno(error, "ENOTDIR"))
          throw new FileOperationFailure(
            "is_symlink",
            "~/skills is a symbolic link or not a folder; Roost keeps the skills there: move it away (mv ~/skills ~/skills.old) and they are copied at the next turn",
          );
        throw error;
      }
    } finally {
      await home.close();
    }
  }

  async function readState(folder: FileHandle): Promise<SkillState> {
    let opened;
    try {
      opened = await openFileAt(
        folder,
        skillInternalNames.state,
        display(skillInternalNames.state),
      );
    } catch (error) {
      if (error instanceof FileOperationFailure && error.code === "not_found")
        return { skills: {} };
      throw error;
    }
    try {
      const parsed = JSON.parse(await opened.handle.readFile("utf8")) as Partial<SkillState>;
      const skills: Record<string, string> = {};
      for (const [name, digest] of Object.entries(parsed.skills ?? {}))
        if (isSkillName(name) && typeof digest === "string") skills[name] = digest;
      return { skills };
    } catch {
      // A damaged state file forgets what it recorded: every skill is sent again, none removed.
      return { skills: {} };
    } finally {
      await opened.handle.close();
    }
  }

  async function writeState(folder: FileHandle, state: SkillState): Promise<void> {
    const temp = `${skillInternalNames.stagePrefix}${randomBytes(8).toString("hex")}.json`;
    const handle = await fs.open(at(folder, temp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
    try {
      await handle.writeFile(`${JSON.stringify(state)}\n`);
      if (durable) await handle.datasync();
    } finally {
      await handle.close();
    }
    await fs.rename(at(folder, temp), at(folder, skillInternalNames.state));
    if (durable) await syncFolder(folder);
  }

  /** SKW5 */
  async function sweep(folder: FileHandle, signal: AbortSignal): Promise<void> {
    for (const entry of await fs.readdir(at(folder))) {
      if (
        entry.startsWith(skillInternalNames.stagePrefix) ||
        entry.startsWith(skillInternalNames.trashPrefix)
      )
        await removeTree(folder, entry, signal);
    }
  }

  async function isFolder(folder: FileHandle, name: string): Promise<boolean> {
    return (await lstatAt(folder, name, display(name)))?.isDirectory() === true;
  }

  async function sync(
    input: SkillOperationInput<"skills.sync">,
    signal: AbortSignal,
  ): Promise<SkillOperationOutput<"skills.sync">> {
    const folder = await openSkillsFolder();
    try {
      await sweep(folder, signal);
      const state = await readState(folder);
      const listed = new Map(input.skills.map((skill) => [skill.name, skill.digest]));
      let changed = false;
      const removed: string[] = [];
      for (const name of Object.keys(state.skills)) {
        if (listed.has(name)) continue;
        await removeTree(folder, name, signal); // SKW3: ours, and the account no longer has it
        delete state.skills[name];
        removed.push(name);
        changed = true;
      }
      const stale: string[] = [];
      for (const [name, digest] of listed) {
        if (state.skills[name] === digest && (await isFolder(folder, name))) continue;
        stale.push(name);
        if (state.skills[name] !== undefined) {
          delete state.skills[name];
          changed = true;
        }
      }
      if (changed) await writeState(folder, state);
      return { stale, removed };
    } finally {
      await folder.close();
    }
  }

  async function put(
    input: SkillOperationInput<"skills.put">,
    signal: AbortSignal,
  ): Promise<SkillOperationOutput<"skills.put">> {
    let bytes = 0;
    const files = input.files.map((file) => {
      const content = decodeChunk(file.data);
      if (content === undefined)
        throw new FileOperationFailure("invalid_input", `${file.path}: the data is not base64`);
      bytes += content.byteLength;
      return {
        ...file,
        content,
        sha256: nodeCrypto().createHash("sha256").update(content).digest("hex"),
      };
    });
    if (bytes > skillLimits.maxSkillBytes)
      throw new FileOperationFailure(
        "too_large",
        `the skill's files hold ${bytes} bytes, over the ${skillLimits.maxSkillBytes}-byte limit`,
      );
    if (new Set(files.map((file) => file.path)).size !== files.length)
      throw new FileOperationFailure("invalid_input", "a path is given twice");
    if (skillDigest(files) !== input.digest)
      throw new FileOperationFailure(
        "invalid_input",
        "the files do not match the digest (damaged on the way); nothing was written",
      ); // SKW2

    const folder = await openSkillsFolder();
    try {
      await sweep(folder, signal);
      const state = await readState(folder);
      if (state.skills[input.name] === input.digest && (await isFolder(folder, input.name)))
        return {
          name: input.name,
          digest: input.digest,
          written: false,
          files: files.length,
          bytes,
        }; // SKW4

      const stage = `${skillInternalNames.stagePrefix}${randomBytes(12).toString("hex")}`;
      await fs.mkdir(at(folder, stage), 0o700);
      try {
        await writeTree(folder, stage, files, signal);
        const trash = `${skillInternalNames.trashPrefix}${randomBytes(12).toString("hex")}`;
        const previous = await lstatAt(folder, input.name, display(input.name));
        if (previous !== undefined) await fs.rename(at(folder, input.name), at(folder, trash)); // SKW2
        await fs.rename(at(folder, stage), at(folder, input.name)); // SKW2
        state.skills[input.name] = input.digest;
        await writeState(folder, state);
        if (previous !== undefined) await removeTree(folder, trash, signal);
      } catch (error) {
        await removeTree(folder, stage, new AbortController().signal).catch(() => undefined);
        throw error;
      }
      return { name: input.name, digest: input.digest, written: true, files: files.length, bytes };
    } finally {
      await folder.close();
    }
  }

  /** Writes `files` into the fresh folder `<folder>/<stage>`, every open no-follow (SKW1). */
  async function writeTree(
    folder: FileHandle,
    stage: string,
    files: readonly { path: string; mode: number; content: Uint8Array }[],
    signal: AbortSignal,
  ): Promise<void> {
    const root = await fs.open(at(folder, stage), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    const folders = new Map<string, FileHandle>([["", root]]);
    const folderAt = async (parts: readonly string[]): Promise<FileHandle> => {
      let current = root;
      for (let index = 0; index < parts.length; index++) {
        const key = parts.slice(0, index + 1).join("/");
        const known = folders.get(key);
        if (known !== undefined) {
          current = known;
          continue;
        }
        const name = parts[index]!;
        await fs.mkdir(at(current, name), 0o755).catch((error: unknown) => {
          if (!isErrno(error, "EEXIST")) throw error;
        });
        const next = await fs.open(at(current, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        await next.chmod(0o755);
        folders.set(key, next);
        current = next;
      }
      return current;
    };
    try {
      for (const file of files) {
        if (signal.aborted) throw new FileOperationFailure("cancelled", "the call was cancelled");
        const parts = file.path.split("/");
        const name = parts.pop()!;
        const parent = await folderAt(parts);
        const handle = await fs.open(
          at(parent, name),
          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
          file.mode,
        );
        try {
          await handle.writeFile(file.content);
          await handle.chmod(file.mode); // whatever the umask
          if (durable) await handle.datasync();
        } finally {
          await handle.close();
        }
      }
      await root.chmod(0o755);
      if (durable) for (const handle of folders.values()) await syncFolder(handle);
    } finally {
      for (const handle of folders.values()) await handle.close().catch(() => undefined);
    }
  }

  return {
    run(call) {
      return exclusive(async (): Promise<SkillOperationOutcome> => {
        const parsed = skillOperationInputSchemas[call.tool].safeParse(call.input);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          const where =
            issue === undefined || issue.path.length === 0 ? "" : ` at ${issue.path.join(".")}`;
          return {
            ok: false,
            error: {
              code: "invalid_input",
              message: `invalid ${call.tool} input${where}: ${issue?.message ?? "schema mismatch"}`,
            },
          };
        }
        try {
          const output =
            call.tool === "skills.sync"
              ? await sync(parsed.data as SkillOperationInput<"skills.sync">, call.signal)
              : await put(parsed.data as SkillOperationInput<"skills.put">, call.signal);
          return { ok: true, output };
        } catch (error) {
          const failure = toFileFailure(error, display());
          if (failure.code === "internal" || failure.code === "io_error")
            log(`worker: ${call.tool} failed: ${failure.message}`);
          return { ok: false, error: { code: failure.code, message: failure.message } };
        }
      });
    },
  };
}
