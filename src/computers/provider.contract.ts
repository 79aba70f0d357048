/**
 * The contract every `ComputerProvider` keeps, as a shared Vitest suite. A provider's test file
 * calls {@link describeProviderContract} with a factory for a fresh subject: the provider, a way
 * to run a shell command inside one of its awake computers, and a wake request whose gateway the
 * worker can dial (it need not answer calls: the contract runs commands through `run`).
 *
 * What it checks:
 *   P1 create() is idempotent and keeps what is on the disk; status is "stopped" after it.
 *   P2 status() of a computer never created is "missing".
 *   P3 wake() starts the computer (status "running"); commands run in its workspace with its home
 *      as HOME; a second wake() of an awake computer keeps it running.
 *   P4 sleep() stops every process; files under the workspace and home survive sleep and wake
 *      (and are there, through withDisk() where the provider has it, while it sleeps); the
 *      provider's fresh-per-wake folder (/tmp where it promises one) does not.
 *   P5 sleep() is idempotent.
 *   P6 destroy() stops the computer and deletes its disk; its status becomes "missing".
 *   P7 close() stops every computer the provider started.
 */
import { randomBytes } from "node:crypto";
import { readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, test } from "vitest";
import type { ComputerPaths, ComputerProvider, WakeRequest } from "./provider.ts";

export interface ContractCommandResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export interface ProviderContractSubject {
  provider: ComputerProvider;
  /** Runs `bash -c command` inside the awake computer, as its user, in its workspace. */
  run(computerId: string, command: string): Promise<ContractCommandResult>;
  wakeRequest(computerId: string): WakeRequest;
  /**
   * Paths as commands inside the computer see them: the same for every computer of a sandboxing
   * provider, or per computer where they are host folders (the process provider).
   */
  inside: InsidePaths | ((computerId: string) => InsidePaths);
  /** Closes the provider (if the test did not) and removes what the subject made. */
  close(): Promise<void>;
}

export interface InsidePaths {
  workspace: string;
  home: string;
  /** A folder the provider promises is empty after every wake; omit if it promises none. */
  freshTmp?: string;
}

function insideOf(subject: ProviderContractSubject, computerId: string): InsidePaths {
  return typeof subject.inside === "function" ? subject.inside(computerId) : subject.inside;
}

/** A sleeping computer's disk: through withDisk() where the provider detaches it at sleep. */
function onDisk<T>(
  provider: ComputerProvider,
  computerId: string,
  use: (paths: ComputerPaths) => Promise<T>,
): Promise<T> {
  return provider.withDisk?.(computerId, use) ?? use(provider.paths(computerId));
}

export interface ProviderContractOptions {
  /** How long to watch for a process that should be gone. @default 400 ms */
  quietMs?: number;
}

/** Registers the contract suite for one provider. */
export function describeProviderContract(
  name: string,
  createSubject: () => Promise<ProviderContractSubject>,
  options: ProviderContractOptions = {},
): void {
  const quietMs = options.quietMs ?? 400;
  const newId = () => `contract-${randomBytes(4).toString("hex")}`;

  async function withSubject(
    run: (subject: ProviderContractSubject) => Promise<void>,
  ): Promise<void> {
    const subject = await createSubject();
    try {
      await run(subject);
    } finally {
      await subject.close();
    }
  }

  async function runOk(
    subject: ProviderContractSubject,
    computerId: string,
    command: string,
  ): Promise<string> {
    const result = await subject.run(computerId, command);
    if (result.exitCode !== 0) {
      throw new Error(`command failed (${result.exitCode}): ${command}\n${result.stderr}`);
    }
    return result.stdout;
  }

  /** Whether a heartbeat file changes within `quietMs` (i.e. the process writing it still runs). */
  async function isBeating(file: string): Promise<boolean> {
    const before = await readFile(file, "utf8").catch(() => "");
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    const after = await readFile(file, "utf8").catch(() => "");
    return before !== after;
  }

  describe(`ComputerProvider contract: ${name}`, () => {
    test("P1 create is idempotent and keeps the disk", async () => {
      await withSubject(async ({ provider }) => {
        const id = newId();
        const paths = await provider.create(id);
        expect(paths).toEqual(provider.paths(id));
        for (const folder of [paths.root, paths.home, paths.workspace, paths.workerState]) {
          expect((await stat(folder)).isDirectory()).toBe(true);
        }
        await writeFile(path.join(paths.workspace, "kept.txt"), "kept");
        expect(await provider.create(id)).toEqual(paths);
        expect(await readFile(path.join(paths.workspace, "kept.txt"), "utf8")).toBe("kept");
        expect(await provider.status(id)).toBe("stopped");
        await provider.destroy(id);
      });
    });

    test("P2 an unknown computer is missing", async () => {
      await withSubject(async ({ provider }) => {
        expect(await provider.status(newId())).toBe("missing");
      });
    });

    test("P3 wake starts the computer; commands run in the workspace with HOME set", async () => {
      await withSubject(async (subject) => {
        const { provider } = subject;
        const id = newId();
        await provider.create(id);
        await provider.wake(id, subject.wakeRequest(id));
        expect(await provider.status(id)).toBe("running");
        expect((await runOk(subject, id, "pwd")).trim()).toBe(insideOf(subject, id).workspace);
        expect((await runOk(subject, id, 'echo "$HOME"')).trim()).toBe(insideOf(subject, id).home);
        await provider.wake(id, subject.wakeRequest(id));
        expect(await provider.status(id)).toBe("running");
        expect((await runOk(subject, id, "echo still")).trim()).toBe("still");
        await provider.destroy(id);
      });
    });

    test("P4 sleep stops every process; workspace and home survive sleep and wake, fresh tmp does not", async () => {
      await withSubject(async (subject) => {
        const { provider } = subject;
        const id = newId();
        const inside = insideOf(subject, id);
        const paths = await provider.create(id);
        await provider.wake(id, subject.wakeRequest(id));
        const tmpLine =
          inside.freshTmp === undefined ? "" : `echo tmp > ${inside.freshTmp}/scratch.txt && `;
        await runOk(
          subject,
          id,
          `echo work > ${inside.workspace}/work.txt && mkdir -p ${inside.home}/.config && echo home > ${inside.home}/.config/home.txt && ${tmpLine}true`,
        );
        // A background process writing a heartbeat into the workspace.
        await runOk(
          subject,
          id,
          `nohup sh -c 'while :; do date +%s%N > ${inside.workspace}/beat; sleep 0.05; done' >/dev/null 2>&1 &`,
        );
        const beat = path.join(paths.workspace, "beat");
        const deadline = Date.now() + 5000;
        while (!(await isBeating(beat))) {
          if (Date.now() > deadline) throw new Error("the background heartbeat never started");
        }

        await provider.sleep(id);
        expect(await provider.status(id)).toBe("stopped");
        await onDisk(provider, id, async (asleep) => {
          const asleepBeat = path.join(asleep.workspace, "beat");
          expect(await readFile(asleepBeat, "utf8")).not.toBe("");
          expect(await isBeating(asleepBeat)).toBe(false);
          expect(await readFile(path.join(asleep.workspace, "work.txt"), "utf8")).toBe("work\n");
        });

        await provider.wake(id, subject.wakeRequest(id));
        expect(
          await runOk(
            subject,
            id,
            `cat ${inside.workspace}/work.txt ${inside.home}/.config/home.txt`,
          ),
        ).toBe("work\nhome\n");
        if (inside.freshTmp !== undefined) {
          expect(await runOk(subject, id, `ls -A ${inside.freshTmp}`)).toBe("");
        }
        expect(await isBeating(beat)).toBe(false);
        await provider.destroy(id);
      });
    });

    test("P5 sleep is idempotent", async () => {
      await withSubject(async (subject) => {
        const { provider } = subject;
        const id = newId();
        await provider.create(id);
        await provider.sleep(id);
        await provider.wake(id, subject.wakeRequest(id));
        await provider.sleep(id);
        await provider.sleep(id);
        expect(await provider.status(id)).toBe("stopped");
        await provider.destroy(id);
      });
    });

    test("P6 destroy stops the computer and deletes its disk", async () => {
      await withSubject(async (subject) => {
        const { provider } = subject;
        const id = newId();
        const paths = await provider.create(id);
        await provider.wake(id, subject.wakeRequest(id));
        await provider.destroy(id);
        expect(await provider.status(id)).toBe("missing");
        await expect(stat(paths.root)).rejects.toThrow(/ENOENT/);
      });
    });

    test("P7 close stops every computer the provider started", async () => {
      await withSubject(async (subject) => {
        const { provider } = subject;
        const ids = [newId(), newId()];
        for (const id of ids) {
          await provider.create(id);
          await provider.wake(id, subject.wakeRequest(id));
        }
        await provider.close();
        for (const id of ids) expect(await provider.status(id)).toBe("stopped");
      });
    });
  });
}
