/**
 * A Slack mention to what Slack shows, with the demo model, against the fake Slack on 127.0.0.1
 * (test/support/fake-slack.ts): from sending the signed Events API request to the first
 * `chat.postMessage` ("working…") and to the `chat.update` with the reply.
 *   node bench/slack.ts [mentions=50]
 * Prints two figures each: a new thread per mention (a new conversation) and replies in one
 * thread (its loop already running).
 */
import type { Api } from "../src/protocol/index.ts";
import { startFakeSlack } from "../test/support/fake-slack.ts";
import { waitFor } from "../test/support/wait.ts";
import { startBenchRoost, summarize } from "./support.ts";

const mentions = Number(process.argv[2] ?? 50);
const slack = await startFakeSlack();
const { roost, api } = await startBenchRoost({
  ROOST_SLACK_INSECURE_API_URL: "1",
  ROOST_MEMORY_PASS: "off",
});
try {
  const bot = await api.call<Api.Bot>("POST", "/v1/bots", { name: "bench", model: "demo" });
  const linked = await api.call<Api.SlackLinked>("PUT", `/v1/bots/${bot.id}/slack`, {
    botToken: slack.token,
    signingSecret: slack.signingSecret,
    apiUrl: slack.apiUrl,
  });
  let counter = 0;
  const nextTs = () => `1764600000.${String((counter += 1)).padStart(6, "0")}`;

  /** One mention; answers ms to the working message and to the reply's update. */
  async function oneMention(threadTs: string | undefined) {
    const ts = nextTs();
    const thread = threadTs ?? ts;
    const posts = slack.callsOf("chat.postMessage").length;
    const sentAt = Date.now();
    await slack.sendEvent(linked.eventsUrl, {
      type: threadTs === undefined ? "app_mention" : "message",
      channel_type: "channel",
      user: "U0BENCH01",
      text: `<@${slack.botUserId}> hello ${ts}`,
      ts,
      channel: "C0BENCH",
      ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
    });
    const working = await waitFor(
      () =>
        slack
          .callsOf("chat.postMessage")
          .slice(posts)
          .find((call) => call.args.thread_ts === thread),
      { timeoutMs: 60_000, what: "the working message" },
    );
    const reply = await waitFor(
      () =>
        slack
          .callsOf("chat.update")
          .find(
            (call) => call.args.ts === working.answer.ts && !call.args.text!.startsWith("working…"),
          ),
      { timeoutMs: 60_000, what: "the reply" },
    );
    return { first: working.at - sentAt, reply: reply.at - sentAt };
  }

  for (let index = 0; index < 5; index++) await oneMention(undefined); // warm-up
  const fresh = { first: [] as number[], reply: [] as number[] };
  for (let index = 0; index < mentions; index++) {
    const sample = await oneMention(undefined);
    fresh.first.push(sample.first);
    fresh.reply.push(sample.reply);
  }
  const threadTs = nextTs();
  await slack.sendEvent(linked.eventsUrl, {
    type: "app_mention",
    user: "U0BENCH01",
    text: `<@${slack.botUserId}> start`,
    ts: threadTs,
    channel: "C0BENCH",
  });
  const inThread = { first: [] as number[], reply: [] as number[] };
  for (let index = 0; index < mentions; index++) {
    const sample = await oneMention(threadTs);
    inThread.first.push(sample.first);
    inThread.reply.push(sample.reply);
  }
  console.log(summarize("mention → first chat.postMessage, new thread", fresh.first));
  console.log(summarize("mention → chat.update with the reply, new thread", fresh.reply));
  console.log(summarize("thread reply → first chat.postMessage, running loop", inThread.first));
  console.log(summarize("thread reply → chat.update with the reply, running loop", inThread.reply));
} finally {
  await roost.stop();
  await slack.close();
}
