/**
 * A conversation of many steps written straight into the store (fast: no turns run), for the
 * timeline's scale test and bench/web-timeline.ts. Every 4 steps are one turn: the person's
 * message, a model step with a shell call, the call's result, and a markdown reply of varying
 * length, so rows have varying heights. Step 1's text is `firstMessageText`.
 */
import type { Platform } from "../../src/platform/index.ts";

export const firstMessageText = "The very first message of this long conversation";

export function turnText(turn: number): string {
  return turn === 0 ? firstMessageText : `Question number ${turn}`;
}

export async function seedLongConversation(
  platform: Platform,
  options: { conversationId: string; authorAccountId: string; steps: number },
): Promise<{ lastSeq: number }> {
  const { conversationId, authorAccountId } = options;
  let lastSeq = 0;
  const append = async (
    id: string,
    turnId: string,
    kind: "message" | "model" | "tool" | "reply",
    payload: Record<string, unknown>,
  ) => {
    if (lastSeq >= options.steps) return;
    lastSeq = (await platform.store.appendStep({ conversationId, id, turnId, kind, payload })).seq;
  };
  for (let turn = 0; lastSeq < options.steps; turn++) {
    const turnId = `turn_seed_${turn}`;
    const callId = `call_seed_${turn}`;
    await append(`step_seed_${turn}_m`, turnId, "message", {
      messageId: `msg_seed_${turn}`,
      text: turnText(turn),
      authorAccountId,
    });
    await append(`step_seed_${turn}_c`, turnId, "model", {
      text: "",
      toolCalls: [{ id: callId, name: "shell", input: { command: `seq 1 ${1 + (turn % 5)}` } }],
      model: "demo",
    });
    await append(`step_seed_${turn}_t`, turnId, "tool", {
      callId,
      name: "shell",
      input: { command: `seq 1 ${1 + (turn % 5)}` },
      output: Array.from({ length: 1 + (turn % 5) }, (_, index) => String(index + 1)).join("\n"),
      isError: false,
      details: { exitCode: 0 },
      durationMs: 12,
    });
    const lines = Array.from(
      { length: 1 + (turn % 7) },
      (_, index) => `- point ${index + 1} of answer ${turn}, with **bold** and \`code\``,
    );
    await append(`step_seed_${turn}_r`, turnId, "reply", {
      text: `Answer to question ${turn}:\n\n${lines.join("\n")}`,
      model: "demo",
      usage: { inputTokens: 100 + turn, outputTokens: 20 + (turn % 40) },
    });
  }
  return { lastSeq };
}
