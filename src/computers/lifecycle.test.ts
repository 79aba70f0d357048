import { describe, expect, it } from "vitest";
import {
  computerStates,
  InvalidTransitionError,
  nextComputerState,
  type ComputerInput,
} from "./lifecycle.ts";

describe("computer lifecycle", () => {
  it("walks asleep → waking → awake → sleeping → asleep", () => {
    let state = nextComputerState("asleep", "wake");
    expect(state).toBe("waking");
    state = nextComputerState(state, "woke");
    expect(state).toBe("awake");
    state = nextComputerState(state, "sleep");
    expect(state).toBe("sleeping");
    expect(nextComputerState(state, "slept")).toBe("asleep");
  });

  it("fails from waking or sleeping, and a failed computer can be woken again", () => {
    expect(nextComputerState("waking", "wake-failed")).toBe("failed");
    expect(nextComputerState("sleeping", "sleep-failed")).toBe("failed");
    expect(nextComputerState("failed", "wake")).toBe("waking");
  });

  it("refuses every other transition", () => {
    const allowed = new Set([
      "asleep:wake",
      "failed:wake",
      "waking:woke",
      "waking:wake-failed",
      "awake:sleep",
      "sleeping:slept",
      "sleeping:sleep-failed",
    ]);
    const inputs: ComputerInput[] = [
      "wake",
      "woke",
      "wake-failed",
      "sleep",
      "slept",
      "sleep-failed",
    ];
    for (const state of computerStates) {
      for (const input of inputs) {
        if (allowed.has(`${state}:${input}`)) continue;
        expect(() => nextComputerState(state, input)).toThrow(InvalidTransitionError);
      }
    }
  });
});
