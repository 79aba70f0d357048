/**
 * A `DurableContext` without an engine, for tests of the loop's decisions: steps run at once,
 * the follow-up wait is a plain timer that `signal()` cuts short. It journals nothing, so it
 * must never back a real conversation.
 */
import type { DurableContext, StepOptions } from "../durable.ts";
import { StepFailedError } from "../durable.ts";

export interface MemoryDurable extends DurableContext {
  /** Names of the steps run so far, in order. */
  readonly steps: string[];
  /** Wake a loop that waits for follow-ups. */
  signal(): void;
  /** Resolves when the loop starts waiting for follow-ups. */
  waiting(): Promise<void>;
}

export function createMemoryDurable(invocationId = "inv_test"): MemoryDurable {
  const steps: string[] = [];
  let wake: (() => void) | undefined;
  let signalled = false;
  let onWaiting: (() => void)[] = [];
  let waits = 0;

  return {
    invocationId,
    steps,
    async step<T>(name: string, action: () => Promise<T>, options: StepOptions = {}): Promise<T> {
      steps.push(name);
      const attempts = options.maxAttempts ?? 3;
      let lastError: unknown;
      for (let attempt = 0; attempt < attempts; attempt++) {
        try {
          return await action();
        } catch (error) {
          lastError = error;
        }
      }
      throw new StepFailedError(
        name,
        lastError instanceof Error ? lastError.message : String(lastError),
      );
    },
    async waitForMessage<T>(timeoutMs: number, check: (waiterId: string) => Promise<T[]>) {
      signalled = false;
      const waiterId = `${invocationId}:waiter:${waits++}`;
      const found = await check(waiterId);
      if (found.length > 0) return found;
      for (const resolve of onWaiting) resolve();
      onWaiting = [];
      if (!signalled) {
        const woken = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), timeoutMs);
          wake = () => {
            clearTimeout(timer);
            resolve(true);
          };
        });
        wake = undefined;
        if (!woken) return "timeout" as const;
      }
      return check(waiterId);
    },
    signal() {
      signalled = true;
      wake?.();
    },
    waiting: () => new Promise<void>((resolve) => onWaiting.push(resolve)),
  };
}
