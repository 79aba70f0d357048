import { describe, expect, it } from "vitest";
import type { Api } from "../protocol/index.ts";
import { createStopper } from "./stopper.ts";

/** A stopper with a hand-driven clock and interrupt answers the test resolves itself. */
function setup() {
  let clock = 1_000_000;
  const notices: string[] = [];
  const calls: ((answer: Api.InterruptResult | Error) => void)[] = [];
  let quit = false;
  const stopper = createStopper({
    interrupt: () =>
      new Promise((resolve, reject) =>
        calls.push((answer) => (answer instanceof Error ? reject(answer) : resolve(answer))),
      ),
    notice: (text) => notices.push(text),
    now: () => clock,
  });
  void stopper.quit.then(() => (quit = true));
  return {
    stopper,
    notices,
    calls,
    advance: (ms: number) => (clock += ms),
    /** Lets the stopper's promise callbacks run. */
    quitNow: async () => {
      await new Promise((resolve) => setImmediate(resolve));
      return quit;
    },
  };
}

describe("Ctrl-C in roost chat", () => {
  it("before the message is sent, Ctrl-C quits (STOP1)", async () => {
    const { stopper, calls, quitNow } = setup();
    stopper.press();
    expect(await quitNow()).toBe(true);
    expect(calls).toHaveLength(0);
  });

  it("while the turn runs, the first Ctrl-C asks for a stop and waits for it (STOP2)", async () => {
    const { stopper, calls, notices, quitNow } = setup();
    stopper.sending();
    stopper.running();
    stopper.press();
    expect(calls).toHaveLength(1);
    expect(notices).toEqual(["stopping the turn… (Ctrl-C again to quit)"]);
    calls[0]!({ interrupted: true });
    expect(await quitNow()).toBe(false);
    expect(stopper.requested).toBe(true);
  });

  it("Ctrl-C while the message is being sent stops the turn as soon as it is stored (STOP2)", async () => {
    const { stopper, calls, quitNow } = setup();
    stopper.sending();
    stopper.press();
    expect(calls).toHaveLength(0);
    stopper.running();
    expect(calls).toHaveLength(1);
    expect(await quitNow()).toBe(false);
  });

  it("a second Ctrl-C while the stop is pending quits, whatever the time (STOP3)", async () => {
    const { stopper, calls, advance, quitNow } = setup();
    stopper.sending();
    stopper.running();
    stopper.press();
    advance(10_000);
    stopper.press();
    expect(await quitNow()).toBe(true);
    expect(calls).toHaveLength(1);
  });

  it("when the server says no turn runs, the Ctrl-C quits (STOP3)", async () => {
    const { stopper, calls, notices, quitNow } = setup();
    stopper.sending();
    stopper.running();
    stopper.press();
    calls[0]!({ interrupted: false });
    expect(await quitNow()).toBe(true);
    expect(notices.at(-1)).toBe("nothing was running");
  });

  it("a failed stop says why; Ctrl-C within 2 s then quits, later it tries again (STOP3)", async () => {
    const first = setup();
    first.stopper.sending();
    first.stopper.running();
    first.stopper.press();
    first.calls[0]!(new Error("cannot reach Roost"));
    expect(await first.quitNow()).toBe(false);
    expect(first.notices.at(-1)).toBe(
      "could not stop the turn: cannot reach Roost (Ctrl-C again to quit)",
    );
    first.advance(500);
    first.stopper.press();
    expect(await first.quitNow()).toBe(true);

    const later = setup();
    later.stopper.sending();
    later.stopper.running();
    later.stopper.press();
    later.calls[0]!(new Error("cannot reach Roost"));
    await later.quitNow();
    later.advance(3000);
    later.stopper.press();
    expect(later.calls).toHaveLength(2);
    expect(await later.quitNow()).toBe(false);
  });

  it("npm passing the terminal's SIGINT on: the same Ctrl-C delivered twice is one press (STOP4)", async () => {
    const { stopper, calls, advance, quitNow } = setup();
    stopper.sending();
    stopper.running();
    stopper.press();
    advance(5);
    stopper.press();
    expect(await quitNow()).toBe(false);
    expect(calls).toHaveLength(1);
  });

  it("after close, presses do nothing", async () => {
    const { stopper, calls, quitNow } = setup();
    stopper.sending();
    stopper.running();
    stopper.close();
    stopper.press();
    expect(calls).toHaveLength(0);
    expect(await quitNow()).toBe(false);
  });
});
