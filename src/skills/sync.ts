/**
 * Copying skills onto the computer (docs/skills.md "On the computer"): `~/skills/<name>/` holds
 * every skill of the account, kept current by the worker's skill operations (protocol/skills.ts).
 *
 * When: the computer tools call the hook of `createSkillSyncHook` before each call that reaches
 * an awake computer. The first one of a turn asks the worker which skills are missing or stale
 * (one round trip carrying names and digests; nothing is written when nothing changed), sends
 * those, and the turn's later calls skip it. So a bot sees the current skills from its first
 * command of a turn on, and no turn that leaves the computer alone pays anything.
 *
 * Invariants:
 *   SKS1 the check and the copy never fail a tool call: any failure is reported in the step's
 *        journaled result and the log, and the call runs on the computer as it is; the next turn
 *        tries again.
 *   SKS2 a sync never holds a turn for long: it stops sending after `timeoutMs` (what was sent
 *        stays, the rest follows in a later turn).
 *   SKS3 the worker removes only skills the account no longer has; a bot limited to some skills
 *        copies only those, so a limited bot's turn never rewrites another bot's skills.
 *   SKS4 the hook journals one step per call (`skills:sync`), whatever it decides inside, so a
 *        replay takes the same path whether or not this process synced the turn before.
 *   SKS5 every worker answer is checked against its protocol schema before it is used.
 */
import { randomBytes } from "node:crypto";
import { toRoostError } from "../errors/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import {
  skillDigest,
  skillOperationInputSchemas,
  skillOperationOutputSchemas,
  type SkillOperationInput,
  type SkillOperationName,
  type SkillOperationOutput,
} from "../protocol/index.ts";
import type { Store } from "../store/index.ts";
import type { ToolCallContext } from "../tools/index.ts";

/** What the sync needs of the gateway (`Gateway.call` fits). */
export interface SkillWorkerCaller {
  call(
    computerId: string,
    request: { callId: string; tool: string; input: unknown; timeoutMs: number },
    options?: { signal?: AbortSignal },
  ): Promise<
    { ok: true; output: unknown } | { ok: false; error: { code: string; message: string } }
  >;
}

export interface SkillSyncReport {
  /**
   * current: nothing to do; updated: all stale skills were sent; partial: time ran out (SKS2);
   * unsupported: the worker has no skill operations (an old self-hosted worker); failed: see
   * `message`; skipped: this turn was synced already.
   */
  state: "current" | "updated" | "partial" | "unsupported" | "failed" | "skipped";
  written: string[];
  removed: string[];
  message?: string;
  durationMs: number;
}

export interface SkillSync {
  sync(input: {
    computerId: string;
    accountId: string;
    /** The bot's skills setting: null for all (SKS3). */
    allowed: readonly string[] | null;
    signal?: AbortSignal;
  }): Promise<SkillSyncReport>;
}

export interface SkillSyncOptions {
  store: Store;
  worker: SkillWorkerCaller;
  /** SKS2 @default 30_000 */
  timeoutMs?: number;
  logger?: Logger;
}

class SkillOperationFailed extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export function createSkillSync(options: SkillSyncOptions): SkillSync {
  const timeoutMs = options.timeoutMs ?? 30_000;

  async function invoke<T extends SkillOperationName>(
    computerId: string,
    tool: T,
    input: SkillOperationInput<T>,
    timeout: number,
    signal: AbortSignal,
  ): Promise<SkillOperationOutput<T>> {
    const result = await options.worker.call(
      computerId,
      {
        callId: `skills_${randomBytes(12).toString("base64url")}`,
        tool,
        input: skillOperationInputSchemas[tool].parse(input),
        timeoutMs: Math.max(1000, timeout),
      },
      { signal },
    );
    if (!result.ok) throw new SkillOperationFailed(result.error.code, result.error.message);
    const checked = skillOperationOutputSchemas[tool].safeParse(result.output); // SKS5
    if (!checked.success)
      throw new SkillOperationFailed(
        "internal",
        `the worker's ${tool} answer does not match the protocol: ${checked.error.message}`,
      );
    return checked.data as SkillOperationOutput<T>;
  }

  return {
    async sync({ computerId, accountId, allowed, signal: outer }) {
      const started = Date.now();
      const deadline = started + timeoutMs;
      const signal = AbortSignal.any([
        AbortSignal.timeout(timeoutMs),
        ...(outer === undefined ? [] : [outer]),
      ]);
      const report = (
        state: SkillSyncReport["state"],
        written: string[],
        removed: string[],
        message?: string,
      ): SkillSyncReport => ({
        state,
        written,
        removed,
        ...(message === undefined ? {} : { message }),
        durationMs: Date.now() - started,
      });
      const written: string[] = [];
      let removed: string[] = [];
      try {
        const skills = await options.store.listSkills(accountId);
        const checked = await invoke(
          computerId,
          "skills.sync",
          { skills: skills.map((skill) => ({ name: skill.name, digest: skill.digest })) },
          deadline - Date.now(),
          signal,
        );
        removed = checked.removed;
        const wanted = allowed === null ? undefined : new Set(allowed);
        const stale = checked.stale.filter((name) => wanted?.has(name) ?? true); // SKS3
        if (stale.length === 0)
          return report(removed.length > 0 ? "updated" : "current", [], removed);
        for (const name of stale) {
          if (Date.now() >= deadline) return report("partial", written, removed); // SKS2
          const skill = skills.find((candidate) => candidate.name === name);
          if (skill === undefined) continue;
          const files = await options.store.readSkillFiles(skill.id);
          if (files.length === 0) continue; // deleted meanwhile; the next sync removes it
          await invoke(
            computerId,
            "skills.put",
            {
              name,
              // The digest of what is sent, which may be newer than the listing's.
              digest: skillDigest(files),
              files: files.map((file) => ({
                path: file.path,
                mode: file.mode === 0o755 ? 0o755 : 0o644,
                data: Buffer.from(file.content).toString("base64"),
              })),
            },
            deadline - Date.now(),
            signal,
          );
          written.push(name);
        }
        return report("updated", written, removed);
      } catch (error) {
        if (error instanceof SkillOperationFailed && error.code === "unknown_tool")
          return report(
            "unsupported",
            written,
            removed,
            "the computer's worker has no skill operations (update the self-hosted worker)",
          );
        if (signal.aborted && outer?.aborted !== true)
          return report("partial", written, removed, `stopped after ${timeoutMs} ms`); // SKS2
        return report("failed", written, removed, toRoostError(error).message); // SKS1
      }
    },
  };
}

/** Turns a recent sync covered, so later calls of the same turn skip it (bounded). */
const rememberedTurns = 10_000;

/**
 * The computer tools' `prepare` hook (tools/computer-tools.ts CT7): syncs the skills once per
 * turn, journaled as one `skills:sync` step per call (SKS4), never failing the call (SKS1).
 */
export function createSkillSyncHook(deps: {
  sync: SkillSync;
  store: Store;
  logger?: Logger;
}): (computerId: string, context: ToolCallContext) => Promise<void> {
  const logger = deps.logger ?? silentLogger;
  const synced = new Map<string, true>();
  return async (computerId, context) => {
    await context.run("skills:sync", async (signal): Promise<SkillSyncReport> => {
      const key = `${computerId}/${context.turnId}`;
      if (synced.has(key)) return { state: "skipped", written: [], removed: [], durationMs: 0 };
      try {
        const bot = await deps.store.getBot(context.botId);
        const report = await deps.sync.sync({
          computerId,
          accountId: context.accountId,
          allowed: bot?.skills ?? null,
          signal,
        });
        // One attempt per turn, whatever its outcome (SKS2): a failing worker costs one try.
        synced.set(key, true);
        if (synced.size > rememberedTurns) synced.delete(synced.keys().next().value!);
        if (report.state === "failed" || report.state === "partial")
          logger.warn("skills on the computer may be out of date", {
            computerId,
            turnId: context.turnId,
            state: report.state,
            message: report.message,
          });
        else if (report.written.length > 0 || report.removed.length > 0)
          logger.info("skills copied to the computer", {
            computerId,
            written: report.written,
            removed: report.removed,
            durationMs: report.durationMs,
          });
        return report;
      } catch (error) {
        // SKS1: the store failed; the call goes on and the next one tries again.
        const message = toRoostError(error).message;
        logger.warn("skills sync failed", { computerId, turnId: context.turnId, message });
        return { state: "failed", written: [], removed: [], message, durationMs: 0 };
      }
    });
  };
}
