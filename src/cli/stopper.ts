/**
 * What Ctrl-C means in `roost chat` (issue 8 §4): stop the bot's running turn; press again to quit.
 *
 * Invariants:
 *   STOP1 before the message is on its way, Ctrl-C quits (nothing runs that is ours to stop).
 *   STOP2 once it is on its way, the first Ctrl-C asks the server to stop the turn, as soon as the
 *         message is stored; the chat then waits for the turn to end (its `interrupted` step).
 *   STOP3 a press while that stop is pending, within `quitWithinMs` of the previous press, or after
 *         the server said no turn was running, quits at once.
 *   STOP4 presses within `sameKeystrokeMs` of each other are one keystroke: under `npx`, npm
 *         passes the terminal's SIGINT on to its child, which may then get the same Ctrl-C twice.
 */
import type { Api } from "../protocol/index.ts";

export interface StopperOptions {
  /** Asks the server to stop the running turn. */
  interrupt(): Promise<Api.InterruptResult>;
  /** Shows a note of the chat itself. */
  notice(text: string): void;
  /** @default 2000 */
  quitWithinMs?: number;
  /** @default 150 */
  sameKeystrokeMs?: number;
  /** @default Date.now */
  now?: () => number;
}

export interface Stopper {
  /** Ctrl-C was pressed. */
  press(): void;
  /** The message is being sent: a Ctrl-C now stops the turn it starts. */
  sending(): void;
  /** The message was stored: the turn it starts can be stopped. */
  running(): void;
  /** Whether a stop was asked for and the server said a turn was running. */
  readonly requested: boolean;
  /** Resolves with "quit" when the user quits. */
  readonly quit: Promise<"quit">;
  close(): void;
}

export function createStopper(options: StopperOptions): Stopper {
  const quitWithinMs = options.quitWithinMs ?? 2000;
  const sameKeystrokeMs = options.sameKeystrokeMs ?? 150;
  const now = options.now ?? Date.now;
  let resolveQuit: (value: "quit") => void = () => undefined;
  const quit = new Promise<"quit">((resolve) => (resolveQuit = resolve));
  let phase: "before" | "sending" | "running" = "before";
  /** Ctrl-C was pressed and the stop is not answered yet (or waits for the message to be stored). */
  let stopping = false;
  let requested = false;
  let lastPress = Number.NEGATIVE_INFINITY;
  let closed = false;

  const interrupt = () => {
    options.interrupt().then(
      (answer) => {
        if (closed) return;
        if (!answer.interrupted) {
          options.notice("nothing was running"); // STOP3
          resolveQuit("quit");
          return;
        }
        requested = true;
      },
      (error: unknown) => {
        if (closed) return;
        stopping = false;
        const reason = error instanceof Error ? error.message : String(error);
        options.notice(`could not stop the turn: ${reason} (Ctrl-C again to quit)`);
      },
    );
  };

  return {
    press() {
      if (closed) return;
      const at = now();
      const sinceLast = at - lastPress;
      if (sinceLast < sameKeystrokeMs) return; // STOP4
      lastPress = at;
      // STOP1, STOP3
      if (phase === "before" || stopping || sinceLast < quitWithinMs) {
        resolveQuit("quit");
        return;
      }
      // STOP2
      stopping = true;
      options.notice("stopping the turn… (Ctrl-C again to quit)");
      if (phase === "running") interrupt();
    },
    sending() {
      phase = "sending";
    },
    running() {
      phase = "running";
      if (stopping && !closed) interrupt(); // STOP2
    },
    get requested() {
      return requested;
    },
    quit,
    close() {
      closed = true;
    },
  };
}
