/**
 * A `DurableContext` without an engine, for tests of durable code's decisions. It keeps a
 * journal like Restate's: a context created with an earlier run's journal replays it (steps,
 * calls, promises and the clock return what they returned then, without running again) and then
 * goes on live, so "a crash after step N repeats nothing before N" can be tested without Restate.
 * Replay checks that the code takes the same path (the same entry kinds and names, in order).
 * It is never a real engine: nothing survives the process.
 */
import { isRoostError } from "../../errors/index.ts";
import type {
  DurableContext,
  ExternalPromise,
  ObjectTarget,
  SendOptions,
  StepOptions,
} from "../durable.ts";
import { CallFailedError, StepFailedError } from "../durable.ts";

export type JournalEntry =
  | { type: "step"; name: string; ok: true; value: unknown }
  | { type: "step"; name: string; ok: false; message: string }
  | { type: "call"; target: ObjectTarget; ok: true; value: unknown }
  | { type: "call"; target: ObjectTarget; ok: false; message: string }
  | { type: "send"; target: ObjectTarget; input: unknown; options: SendOptions }
  | { type: "promise"; id: string }
  | { type: "promise-result"; id: string; value: unknown }
  | { type: "promise-timeout"; id: string }
  | { type: "now"; value: number }
  | { type: "sleep"; ms: number };

/** Handles `call`s and `send`s to other objects in tests: `objects[name](key, handler, input)`. */
export type MemoryObjects = Record<
  string,
  (key: string, handler: string, input: unknown) => Promise<unknown>
>;

export interface MemoryDurableOptions {
  /** @default "inv_test" */
  invocationId?: string;
  /** An earlier run's journal to replay before going live. */
  journal?: readonly JournalEntry[];
  objects?: MemoryObjects;
  /** @default Date.now */
  clock?: () => number;
  /** Scale for durable sleeps and timeouts (tests shrink them). @default 1 */
  timeScale?: number;
}

export interface MemoryDurable extends DurableContext {
  /** Everything journaled so far, replayed entries included. */
  readonly journal: JournalEntry[];
  /** Names of the steps whose actions actually ran (not replayed), in order. */
  readonly steps: string[];
  /** Sends made so far (live and replayed), for assertions. */
  readonly sent: { target: ObjectTarget; input: unknown; options: SendOptions }[];
  /** Resolve an external promise by id (what the kicker does through Restate). */
  resolveExternal(id: string, value: unknown): boolean;
  /** Resolve the newest pending external promise (a follow-up message arrived). */
  signal(): void;
  /** Resolves when the code next waits on an external promise. */
  waiting(): Promise<void>;
}

export class ReplayMismatchError extends Error {
  override readonly name = "ReplayMismatchError";
}

export function createMemoryDurable(options: MemoryDurableOptions | string = {}): MemoryDurable {
  const settings = typeof options === "string" ? { invocationId: options } : options;
  const invocationId = settings.invocationId ?? "inv_test";
  const replay = [...(settings.journal ?? [])];
  const journal: JournalEntry[] = [];
  const steps: string[] = [];
  const sent: MemoryDurable["sent"] = [];
  const clock = settings.clock ?? Date.now;
  const scale = settings.timeScale ?? 1;
  const pending = new Map<string, (value: unknown) => void>();
  const early = new Map<string, unknown>();
  let onWaiting: (() => void)[] = [];
  let promises = 0;
  const controller = new AbortController();

  /** The next replayed entry, checked against what the code does now. */
  function replayed<E extends JournalEntry>(type: E["type"], describe: string): E | undefined {
    const next = replay.shift();
    if (next === undefined) return undefined;
    if (next.type !== type || ("name" in next && `${next.type}:${next.name}` !== describe)) {
      throw new ReplayMismatchError(
        `replay took another path: the journal has ${JSON.stringify(next)}, the code did ${describe}`,
      );
    }
    journal.push(next);
    return next as E;
  }

  const record = (entry: JournalEntry) => void journal.push(entry);
  const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms * scale));

  async function attempt<T>(
    name: string,
    action: (signal: AbortSignal) => Promise<T>,
    maxAttempts: number,
  ): Promise<{ ok: true; value: T } | { ok: false; message: string }> {
    let failures = 0;
    let backoffMs = 5;
    for (;;) {
      try {
        return { ok: true, value: await action(controller.signal) };
      } catch (error) {
        if (isRoostError(error) && error.retryable) {
          // DUR1: infrastructure errors are retried for as long as it takes.
          await delay(Math.min(backoffMs, 50) / scale);
          backoffMs *= 2;
          continue;
        }
        const message = error instanceof Error ? error.message : String(error);
        if (isRoostError(error)) return { ok: false, message }; // DUR2: terminal
        if (++failures >= maxAttempts) return { ok: false, message };
      }
      void name;
    }
  }

  return {
    invocationId,
    journal,
    steps,
    sent,

    async step<T>(
      name: string,
      action: (signal: AbortSignal) => Promise<T>,
      options: StepOptions = {},
    ) {
      const entry = replayed<Extract<JournalEntry, { type: "step" }>>("step", `step:${name}`);
      const outcome =
        entry ??
        (await (async () => {
          steps.push(name);
          const result = await attempt(name, action, options.maxAttempts ?? 3);
          const recorded: JournalEntry = result.ok
            ? { type: "step", name, ok: true, value: structuredClone(result.value) as unknown }
            : { type: "step", name, ok: false, message: result.message };
          record(recorded);
          return recorded;
        })());
      if (!outcome.ok) throw new StepFailedError(name, outcome.message);
      return structuredClone(outcome.value) as T;
    },

    async now() {
      const entry = replayed<Extract<JournalEntry, { type: "now" }>>("now", "now");
      if (entry !== undefined) return entry.value;
      const value = clock();
      record({ type: "now", value });
      return value;
    },

    async sleep(ms) {
      if (replayed("sleep", "sleep") !== undefined) return;
      await delay(ms);
      record({ type: "sleep", ms });
    },

    awaitExternal<T>(): ExternalPromise<T> {
      const entry = replayed<Extract<JournalEntry, { type: "promise" }>>("promise", "promise");
      const id = entry?.id ?? `${invocationId}:promise:${promises++}`;
      if (entry === undefined) record({ type: "promise", id });
      return {
        id,
        async wait(timeoutMs) {
          const next = replay[0];
          if (next !== undefined && "id" in next && next.id === id) {
            replay.shift();
            journal.push(next);
            return next.type === "promise-result" ? { value: next.value as T } : "timeout";
          }
          if (early.has(id)) {
            const value = early.get(id);
            early.delete(id);
            record({ type: "promise-result", id, value });
            return { value: value as T };
          }
          for (const resolve of onWaiting) resolve();
          onWaiting = [];
          const outcome = await new Promise<{ value: T } | "timeout">((resolve) => {
            const timer =
              timeoutMs === undefined
                ? undefined
                : setTimeout(() => {
                    pending.delete(id);
                    resolve("timeout");
                  }, timeoutMs * scale);
            pending.set(id, (value) => {
              if (timer !== undefined) clearTimeout(timer);
              pending.delete(id);
              resolve({ value: value as T });
            });
          });
          record(
            outcome === "timeout"
              ? { type: "promise-timeout", id }
              : { type: "promise-result", id, value: outcome.value },
          );
          return outcome;
        },
      };
    },

    async call<O>(target: ObjectTarget, input: unknown): Promise<O> {
      const describe = `call:${target.object}/${target.handler}`;
      const next = replay[0];
      let entry: Extract<JournalEntry, { type: "call" }>;
      if (next !== undefined) {
        replay.shift();
        if (
          next.type !== "call" ||
          next.target.object !== target.object ||
          next.target.handler !== target.handler ||
          next.target.key !== target.key
        )
          throw new ReplayMismatchError(
            `replay took another path: the journal has ${JSON.stringify(next)}, the code did ${describe}`,
          );
        journal.push(next);
        entry = next;
      } else {
        const handler = settings.objects?.[target.object];
        if (handler === undefined) throw new Error(`no test object named ${target.object}`);
        try {
          entry = {
            type: "call",
            target,
            ok: true,
            value: await handler(target.key, target.handler, structuredClone(input)),
          };
        } catch (error) {
          entry = {
            type: "call",
            target,
            ok: false,
            message: error instanceof Error ? error.message : String(error),
          };
        }
        record(entry);
      }
      if (!entry.ok) throw new CallFailedError(target, entry.message);
      return structuredClone(entry.value) as O;
    },

    send(target, input, options = {}) {
      const next = replay[0];
      if (next !== undefined) {
        replay.shift();
        if (
          next.type !== "send" ||
          next.target.object !== target.object ||
          next.target.handler !== target.handler
        )
          throw new ReplayMismatchError(
            `replay took another path: the journal has ${JSON.stringify(next)}, the code did send:${target.object}/${target.handler}`,
          );
        journal.push(next);
        sent.push({ target, input, options });
        return;
      }
      record({ type: "send", target, input: structuredClone(input), options });
      sent.push({ target, input, options });
      const handler = settings.objects?.[target.object];
      if (handler === undefined) return;
      const run = () =>
        handler(target.key, target.handler, structuredClone(input)).catch(() => undefined);
      if (options.delayMs === undefined) void run();
      else setTimeout(() => void run(), options.delayMs * scale);
    },

    resolveExternal(id, value) {
      const resolve = pending.get(id);
      if (resolve === undefined) {
        early.set(id, value);
        return false;
      }
      resolve(value);
      return true;
    },

    signal() {
      const newest = [...pending.keys()].at(-1);
      if (newest !== undefined) pending.get(newest)?.(true);
      else {
        const last = [...journal].reverse().find((entry) => entry.type === "promise");
        if (last !== undefined && last.type === "promise") early.set(last.id, true);
      }
    },

    waiting: () => new Promise<void>((resolve) => onWaiting.push(resolve)),
  };
}
