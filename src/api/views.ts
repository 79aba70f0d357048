/**
 * What the API answers, built from store records: each view is typed by the wire types of
 * src/protocol/api.ts, which the CLI and the web app read too.
 */
import type { TurnState } from "../events/index.ts";
import type { Api } from "../protocol/index.ts";
import type { ApiToken, Bot, Conversation, Step } from "../store/index.ts";

const iso = (epochMs: number) => new Date(epochMs).toISOString();

export function botView(
  bot: Bot,
  defaultModel: { id: string; isDemo: boolean },
  /** The caller, for `own`; absent: the owner. */
  callerId: string = bot.accountId,
): Api.Bot {
  return {
    id: bot.id,
    name: bot.name,
    instructions: bot.instructions,
    model: bot.model,
    effectiveModel: bot.model ?? defaultModel.id,
    isDemo: bot.model === "demo" || (bot.model === null && defaultModel.isDemo),
    memoryReview: bot.memoryReview,
    skills: bot.skills,
    notify: bot.notify,
    teamId: bot.teamId,
    own: bot.accountId === callerId,
    browserRecording: bot.browserRecording,
    createdAt: iso(bot.createdAt),
    updatedAt: iso(bot.updatedAt),
  };
}

export function conversationView(conversation: Conversation, state: TurnState): Api.Conversation {
  return {
    id: conversation.id,
    botId: conversation.botId,
    title: conversation.title,
    lastSeq: conversation.lastSeq,
    state,
    place: conversation.place,
    createdAt: iso(conversation.createdAt),
    updatedAt: iso(conversation.updatedAt),
  };
}

export function stepView(step: Step): Api.Step {
  const view = {
    seq: step.seq,
    id: step.id,
    turnId: step.turnId,
    kind: step.kind,
    payload: step.payload,
    createdAt: iso(step.createdAt),
  };
  // The store keeps payloads as the JSON the loop wrote, and the loop writes the payload type
  // of each kind (protocol/api.ts); the store does not re-check them on the way out.
  return view as unknown as Api.Step;
}

export function tokenView(token: ApiToken, currentTokenId: string): Api.Token {
  return {
    id: token.id,
    name: token.name,
    createdAt: iso(token.createdAt),
    lastUsedAt: token.lastUsedAt === null ? null : iso(token.lastUsedAt),
    current: token.id === currentTokenId,
  };
}
