/**
 * Slack out (docs/slack.md "Out"): the loop's hooks (LOOP11) that show a turn of a Slack
 * conversation in its thread: a "working…" message before the first model call, updated before
 * each next one (`chat.update`), and replaced by the reply when the turn settles; a long reply
 * goes up as a file (files.uploadV2).
 *
 * Invariants:
 *   SLK11 every Slack call of a turn runs in a journaled step (the engine's `step`), so a crash
 *         of this process at any point replays the turn's end and the reply is posted; the turn's
 *         row (SLST4) makes a replayed step post nothing twice (the working message is recorded
 *         before its step ends; the reply is marked once).
 *   SLK12 a rate limit or an outage of Slack is retried by the step with Slack's `retry-after`
 *         (DUR1); a terminal error (revoked token, missing scope) is kept on the link (SLK5) and
 *         the turn's reply stays in Roost, where the person can read it.
 *   SLK13 conversations with no Slack place are not touched (one store read per model call and
 *         one at the turn's end, each in its journaled step).
 */
import type { DurableContext } from "../engine/index.ts";
import type { ModelCallInfo, SettledTurn } from "../loop/index.ts";
import type { Api } from "../protocol/index.ts";
import type { SlackPlace, Store } from "../store/index.ts";
import { SlackCallError } from "./client.ts";
import { teamOfPlace, type SlackLinks } from "./service.ts";

/** Past this many characters a reply goes up as a file. @default 3500 (Slack cuts at 4000) */
export const maxInlineReplyChars = 3500;
export const workingText = "working…";

export interface SlackTurnDependencies {
  store: Store;
  links: SlackLinks;
}

export function createSlackTurnHooks(deps: SlackTurnDependencies) {
  const { store, links } = deps;

  /** The place and an open client, or undefined when the conversation is not Slack's (SLK13). */
  async function target(conversationId: string, botId: string) {
    const place = await store.slackPlaceOfConversation(conversationId);
    if (place === undefined) return undefined;
    const opened = await links.open(botId, teamOfPlace(place)); // SLK27
    if (opened === undefined || opened.token === "") return undefined;
    return { place, client: links.clientOf(opened.link, opened.token) };
  }

  /** SLK12: retryable errors go up to the step (it retries); terminal ones end the delivery. */
  async function terminalAsNull<T>(work: () => Promise<T>): Promise<T | null> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof SlackCallError && !error.retryable) return null;
      throw error;
    }
  }

  const inThread = (place: SlackPlace) =>
    place.threadTs === null ? {} : { thread_ts: place.threadTs };

  async function beforeModelCall(durable: DurableContext, call: ModelCallInfo): Promise<undefined> {
    await durable.step(`slack:working:${call.index}`, async () => {
      const found = await target(call.conversationId, call.botId);
      if (found === undefined) return null;
      const { place, client } = found;
      return terminalAsNull(async () => {
        const turn = await store.getSlackTurn(call.turnId);
        if (turn?.repliedAt !== undefined && turn.repliedAt !== null) return null;
        if (turn?.workingTs === undefined || turn.workingTs === null) {
          const posted = await client.call<{ ts?: string }>("chat.postMessage", {
            channel: place.channel,
            text: workingText,
            ...inThread(place),
          });
          await store.putSlackTurn({
            turnId: call.turnId,
            conversationId: call.conversationId,
            workingTs: posted.ts ?? null,
          }); // SLK11
          return null;
        }
        await client.call("chat.update", {
          channel: place.channel,
          ts: turn.workingTs,
          text: `${workingText} (step ${call.index + 1})`,
        });
        return null;
      });
    });
    return undefined;
  }

  async function replyText(turn: SettledTurn): Promise<string> {
    if (turn.outcome === "interrupted") return "_(stopped)_";
    if (turn.outcome === "no_reply") return "_(nothing to add)_";
    const step = await store.latestStepOfKind(turn.conversationId, turn.outcome);
    if (step === undefined || step.seq < turn.fromSeq) return "_(no reply)_";
    if (turn.outcome === "reply") return (step.payload as unknown as Api.ReplyPayload).text;
    return `:warning: ${(step.payload as unknown as Api.ErrorPayload).message}`;
  }

  /** SLK28: a listener routine's run answers in the heard message's thread. */
  async function runTarget(turn: SettledTurn) {
    const source = turn.trigger.source;
    if (source.kind !== "webhook") return undefined;
    const reply = await store.getSlackRunReply(source.runId);
    if (reply === undefined || reply.botId !== turn.botId) return undefined;
    const opened = await links.open(reply.botId, reply.slackTeamId);
    if (opened === undefined || opened.token === "") return undefined;
    const place: SlackPlace = {
      botId: reply.botId,
      placeKey: `thread:${reply.slackTeamId}:${reply.channel}:${reply.threadTs}`,
      conversationId: turn.conversationId,
      channel: reply.channel,
      threadTs: reply.threadTs,
      createdAt: 0,
    };
    return { place, client: links.clientOf(opened.link, opened.token) };
  }

  async function afterTurn(durable: DurableContext, turn: SettledTurn): Promise<void> {
    await durable.step("slack:reply", async () => {
      const found = (await target(turn.conversationId, turn.botId)) ?? (await runTarget(turn));
      if (found === undefined) return null;
      const { place, client } = found;
      const text = await replyText(turn);
      return terminalAsNull(async () => {
        const row = await store.getSlackTurn(turn.turnId);
        if (row?.repliedAt !== undefined && row.repliedAt !== null) return null; // SLK11
        const long = text.length > maxInlineReplyChars;
        const shown = long
          ? `${text.slice(0, 300).trimEnd()}… (the whole reply is attached)`
          : text === ""
            ? "_(empty reply)_"
            : text;
        if (row?.workingTs !== undefined && row.workingTs !== null)
          await client.call("chat.update", {
            channel: place.channel,
            ts: row.workingTs,
            text: shown,
          });
        else
          await client.call("chat.postMessage", {
            channel: place.channel,
            text: shown,
            ...inThread(place),
          });
        if (long)
          await client.uploadFile({
            channel: place.channel,
            threadTs: place.threadTs,
            filename: "reply.md",
            content: text,
            initialComment: "The whole reply",
          });
        await store.markSlackTurnReplied(turn.turnId, turn.conversationId); // SLK11
        return null;
      });
    });
  }

  return { beforeModelCall, afterTurn };
}
