/**
 * Uploads (docs/uploads.md) against a real Roost child process and its computer: the time of an
 * upload into the blob store (10 KiB and 25 MiB), and what attaching files adds to a turn — the
 * time from sending `$ true` to its reply, without files and with one 10 KiB or one 25 MiB file
 * (the turn copies it into the computer first).
 *
 *   node bench/uploads.ts [--rounds 20] [--provider local|process]
 */
import { randomBytes, randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { parseArgs } from "node:util";
import { startBenchRoost, summarize } from "./support.ts";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "20" },
    provider: { type: "string", default: "process" },
  },
});
const rounds = Number.parseInt(values.rounds, 10);

const { roost, api, dataDir } = await startBenchRoost({
  ROOST_COMPUTER_PROVIDER: values.provider,
  ROOST_FOLLOW_UP_WINDOW_MS: "100",
  ROOST_RATE_LIMIT_PER_MINUTE: "0",
});
try {
  const bot = await api.createBot("bench-uploads");
  const conversationId = (await api.createConversation(bot.id)).id;
  const upload = async (name: string, bytes: Buffer) => {
    const response = await fetch(
      `${roost.url}/v1/conversations/${conversationId}/uploads?name=${name}`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${roost.token()}`, "content-type": "text/plain" },
        body: bytes,
      },
    );
    if (response.status !== 201)
      throw new Error(`upload: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { id: string }).id;
  };
  const turn = async (attachments: string[]) => {
    const replies = (await api.steps(conversationId)).filter((s) => s.kind === "reply").length;
    const started = performance.now();
    await api.call("POST", `/v1/conversations/${conversationId}/messages`, {
      text: "$ true",
      clientMessageId: randomUUID(),
      attachments,
    });
    await api.waitForSteps(conversationId, "reply", replies + 1, 120_000);
    return performance.now() - started;
  };

  const small = Buffer.from("x".repeat(10 * 1024));
  const big = Buffer.from(randomBytes((25 * 1024 * 1024) / 2).toString("hex"));
  await turn([]); // wakes the computer
  const timed = async (label: string, count: number, body: (index: number) => Promise<number>) => {
    const samples: number[] = [];
    for (let index = 0; index < count; index++) samples.push(await body(index));
    console.log(summarize(label, samples));
  };
  const uploadTimed = (name: string, bytes: Buffer) => async (index: number) => {
    const started = performance.now();
    await upload(`${name}-${index}.txt`, bytes);
    return performance.now() - started;
  };
  await timed("upload 10 KiB", rounds, uploadTimed("small", small));
  await timed("upload 25 MiB", 3, uploadTimed("big", big));
  await timed("turn, no files", rounds, () => turn([]));
  await timed("turn, one 10 KiB file", rounds, async (index) =>
    turn([await upload(`turn-small-${index}.txt`, small)]),
  );
  await timed("turn, one 25 MiB file", 3, async (index) =>
    turn([await upload(`turn-big-${index}.txt`, big)]),
  );
} finally {
  await roost.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
