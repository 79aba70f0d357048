/**
 * One-step turn overhead with the demo model: from POSTing a message to the reply's "changed"
 * event on the events stream. Target p50 ≤ 25 ms.
 *   node bench/turn-latency.ts [turns=200]
 * Prints two figures: a loop that is already running (a follow-up in the same conversation) and
 * a cold start (a new conversation per turn, so Restate starts a new invocation).
 */
import { openEventStream } from "../test/support/sse.ts";
import { startBenchRoost, summarize } from "./support.ts";

const turns = Number(process.argv[2] ?? 200);
const { roost, api } = await startBenchRoost();
try {
  const bot = await api.createBot("bench");

  async function oneTurn(
    conversationId: string,
    stream: Awaited<ReturnType<typeof openEventStream>>,
    text: string,
  ) {
    const started = performance.now();
    const ack = await api.send(conversationId, text);
    await stream.next(
      (event) => event.event === "changed" && (event.data as { seq: number }).seq >= ack.seq + 1,
    );
    return performance.now() - started;
  }

  // Warm: one conversation, its loop waiting for follow-ups between turns.
  const warm: number[] = [];
  const conversation = await api.createConversation(bot.id);
  const stream = await openEventStream(
    `${roost.url}/v1/conversations/${conversation.id}/events`,
    roost.token(),
  );
  await stream.next((event) => event.event === "hello");
  for (let index = 0; index < 10; index++)
    await oneTurn(conversation.id, stream, `warm-up ${index}`);
  for (let index = 0; index < turns; index++)
    warm.push(await oneTurn(conversation.id, stream, `turn ${index}`));
  await stream.close();

  // Cold: a new conversation each turn.
  const cold: number[] = [];
  for (let index = 0; index < Math.min(turns, 100); index++) {
    const fresh = await api.createConversation(bot.id);
    const freshStream = await openEventStream(
      `${roost.url}/v1/conversations/${fresh.id}/events`,
      roost.token(),
    );
    await freshStream.next((event) => event.event === "hello");
    cold.push(await oneTurn(fresh.id, freshStream, "hello"));
    await freshStream.close();
  }

  console.log(summarize("one-step turn, running loop (POST → reply event)", warm));
  console.log(summarize("one-step turn, new conversation (POST → reply event)", cold));
} finally {
  await roost.stop();
}
