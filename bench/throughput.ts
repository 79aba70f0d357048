/**
 * Throughput: N conversations at once (default 50), each sending one-step turns back to back
 * with the demo model, for a fixed number of turns per conversation. Target ≥ 100 turns/s.
 *   node bench/throughput.ts [conversations=50] [turnsEach=20]
 */
import { openEventStream } from "../test/support/sse.ts";
import { startBenchRoost } from "./support.ts";

const conversations = Number(process.argv[2] ?? 50);
const turnsEach = Number(process.argv[3] ?? 20);
const { roost, api } = await startBenchRoost();
try {
  const bot = await api.createBot("bench");
  const lanes = await Promise.all(
    Array.from({ length: conversations }, async () => {
      const conversation = await api.createConversation(bot.id);
      const stream = await openEventStream(
        `${roost.url}/v1/conversations/${conversation.id}/events`,
        roost.token(),
      );
      await stream.next((event) => event.event === "hello");
      return { conversation, stream };
    }),
  );
  const started = performance.now();
  await Promise.all(
    lanes.map(async ({ conversation, stream }) => {
      for (let index = 0; index < turnsEach; index++) {
        const ack = await api.send(conversation.id, `turn ${index}`);
        await stream.next(
          (event) =>
            event.event === "changed" && (event.data as { seq: number }).seq >= ack.seq + 1,
          60_000,
        );
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const total = conversations * turnsEach;
  console.log(
    `throughput: ${conversations} conversations × ${turnsEach} one-step turns = ${total} turns in ${seconds.toFixed(2)} s → ${(total / seconds).toFixed(1)} turns/s`,
  );
  await Promise.all(lanes.map(({ stream }) => stream.close()));
} finally {
  await roost.stop();
}
