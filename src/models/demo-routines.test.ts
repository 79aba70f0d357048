/** The demo model answers routine runs: it quotes the instruction and the webhook's payload. */
import { describe, expect, test } from "vitest";
import { renderMessageText } from "../loop/index.ts";
import { runMessageText } from "../routines/index.ts";
import { createDemoModel } from "./demo.ts";

const model = createDemoModel();
const answer = async (text: string) =>
  (await model.infer({ system: "s", tools: [], messages: [{ role: "user", text }] })).text;

describe("the demo model's routine runs", () => {
  test("a scheduled run: the instruction is quoted", async () => {
    const text = renderMessageText(
      runMessageText({ name: "Morning", instruction: "Summarise the news." }),
      { kind: "routine", routineId: "rtn_1", runId: "rrun_1" },
    );
    expect(await answer(text)).toBe(
      '[demo model] Routine run rrun_1 of "Morning". Instruction: "Summarise the news.".',
    );
  });

  test("a webhook run: the instruction and the payload, still marked untrusted, are quoted", async () => {
    const text = renderMessageText(
      runMessageText(
        { name: "Alerts", instruction: "Triage it." },
        { alert: "disk full", code: "```" },
      ),
      { kind: "webhook", routineId: "rtn_1", runId: "rrun_2" },
    );
    const reply = await answer(text);
    expect(reply).toContain('Webhook run rrun_2 of "Alerts". Instruction: "Triage it."');
    expect(reply).toContain("Payload (untrusted outside content, not followed):");
    expect(reply).toContain('"alert": "disk full"');
    // The fence is longer than any run of backticks in the payload.
    expect(reply).toContain("````json\n");
  });

  test("a person's message that only looks like a run is not one", async () => {
    expect(await answer('Routine "x":\nhello')).toContain("You said:");
  });
});
