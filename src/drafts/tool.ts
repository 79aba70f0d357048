/**
 * The `draft` server tool: the bot prepares an email, a Slack message or a message to a person;
 * the owner sees it as a card in the conversation and sends or discards it (send.ts). The bot
 * never sends it itself.
 *
 * Invariants:
 *   DRT1 a replayed call makes no second draft: the draft's id comes from the call id (store
 *        createDraft is idempotent by id), and so does its notification's.
 *   DRT2 the draft belongs to the turn's account, bot and conversation, whatever the input says.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import type { EventHub } from "../events/index.ts";
import type { Notifier } from "../notifications/index.ts";
import { draftKinds } from "../protocol/index.ts";
import type { DraftKind, Store } from "../store/index.ts";
import { defineToolSource, serverTool, type ToolSource } from "../tools/index.ts";
import { publishDraft } from "./send.ts";

export const draftLimits = {
  textChars: 20_000,
  toChars: 320,
  subjectChars: 300,
  /** Drafts waiting in one conversation: a bot that drafts in a loop is stopped here. */
  pendingPerConversation: 50,
} as const;

const input = z.strictObject({
  kind: z
    .enum(draftKinds as [DraftKind, ...DraftKind[]])
    .describe('What it is: "email", "slack" (a Slack message) or "message" (to a person)'),
  to: z
    .string()
    .min(1)
    .max(draftLimits.toChars)
    .describe("Who or where it goes: an email address, a Slack channel or person, a person's name"),
  subject: z.string().max(draftLimits.subjectChars).optional().describe("The subject (emails)"),
  text: z.string().min(1).max(draftLimits.textChars).describe("The text, ready to send"),
});

const description =
  "Prepare an email, a Slack message or a message to a person for the user to review. The user sees a draft card and sends or discards it; you never send it yourself. Use it whenever something should go out in the user's name.";

export function draftIdOf(callId: string): string {
  return `dft_${createHash("sha256").update(callId).digest("base64url").slice(0, 22)}`;
}

export function createDraftTools(deps: {
  store: Store;
  events: EventHub;
  notifier: Notifier;
}): ToolSource {
  return defineToolSource("drafts", [
    serverTool({
      name: "draft",
      description,
      input,
      async run(request, context) {
        if (request.subject !== undefined && request.kind !== "email")
          return { output: "Only an email has a subject; leave subject out.", isError: true };
        const waiting = await deps.store.listDrafts(context.accountId, {
          conversationId: context.conversationId,
          status: "pending",
          limit: draftLimits.pendingPerConversation,
        });
        const id = draftIdOf(context.callId);
        if (
          waiting.length >= draftLimits.pendingPerConversation &&
          !waiting.some((draft) => draft.id === id)
        )
          return {
            output: `Not saved: ${draftLimits.pendingPerConversation} drafts already wait for the user in this conversation. Ask them to send or discard some first.`,
            isError: true,
            details: { code: "too_many_drafts" },
          };
        const { draft, created } = await deps.store.createDraft({
          id, // DRT1
          accountId: context.accountId, // DRT2
          botId: context.botId,
          conversationId: context.conversationId,
          kind: request.kind,
          to: request.to.trim(),
          subject: request.subject?.trim() ?? null,
          text: request.text,
        });
        if (created) publishDraft(deps.events, draft);
        const bot = await deps.store.getBot(context.botId);
        if (bot?.notify === true)
          await deps.notifier.notify({
            id: `draft:${draft.id}`, // DRT1
            accountId: context.accountId,
            kind: "draft",
            title: `${bot.name} drafted ${request.kind === "email" ? "an email" : request.kind === "slack" ? "a Slack message" : "a message"} to ${draft.to}`,
            body: draft.text.slice(0, 300),
            botId: context.botId,
            conversationId: context.conversationId,
            subjectId: draft.id,
          });
        return {
          output: `Draft ${draft.id} is ready for the user to review: they send or discard it from the conversation. Do not send it another way.`,
          isError: false,
          details: { draftId: draft.id, kind: draft.kind, to: draft.to },
        };
      },
    }),
  ]);
}
