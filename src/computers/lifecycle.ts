/**
 * A computer's lifecycle (ARCHITECTURE.md §7): every transition is in `nextComputerState`.
 *
 *   asleep ──wake──▶ waking ──woke──▶ awake ──sleep──▶ sleeping ──slept──▶ asleep
 *                      │                                   │
 *                      └──wake-failed──▶ failed ◀──sleep-failed
 *   failed ──wake──▶ waking      (a failed computer may be woken again)
 *
 * This is a hosted computer's lifecycle. A self-hosted machine has none: nothing starts or stops
 * it, and its state (`connected` / `disconnected`) is whether its worker is connected right now
 * (control-plane.ts, C7).
 */

export const computerStates = ["asleep", "waking", "awake", "sleeping", "failed"] as const;
/** A hosted computer's state. */
export type ComputerState = (typeof computerStates)[number];
export const selfHostedStates = ["connected", "disconnected"] as const;
export type SelfHostedState = (typeof selfHostedStates)[number];
/** The two kinds of computer (docs/computers.md): one Roost runs, or the user's own machine. */
export const computerKinds = ["hosted", "self-hosted"] as const;
export type ComputerKind = (typeof computerKinds)[number];
export type ComputerInput = "wake" | "woke" | "wake-failed" | "sleep" | "slept" | "sleep-failed";

export class InvalidTransitionError extends Error {
  override readonly name = "InvalidTransitionError";
  constructor(state: ComputerState, input: ComputerInput) {
    super(`computer: cannot ${input} while ${state}`);
  }
}

export function nextComputerState(state: ComputerState, input: ComputerInput): ComputerState {
  switch (state) {
    case "asleep":
    case "failed":
      if (input === "wake") return "waking";
      break;
    case "waking":
      if (input === "woke") return "awake";
      if (input === "wake-failed") return "failed";
      break;
    case "awake":
      if (input === "sleep") return "sleeping";
      break;
    case "sleeping":
      if (input === "slept") return "asleep";
      if (input === "sleep-failed") return "failed";
      break;
    default: {
      const unreachable: never = state;
      throw new Error(`unknown computer state ${String(unreachable)}`);
    }
  }
  throw new InvalidTransitionError(state, input);
}
