/**
 * Branches (docs/api.md "Branches", protocol/branches.ts, decision 0036): regenerate the last
 * reply, or edit a message and send it again. Neither rewrites the record: the new message says
 * which one it replaces, and the earlier branch stays stored and readable.
 *
 * Invariants:
 *   BAPI1 only the person who started the conversation branches it; another account's id answers
 *         404 exactly like a missing one (API1), a member of a shared one 403.
 *   BAPI2 a branch starts only from a message in the active branch (BR1), never while the bot
 *         works (409: stop it first), and never from a message the summary already folded in.
 *   BAPI3 a repeat of the same clientMessageId stores nothing new and answers the first message
 *         (STORE3), even though its target has left the active branch since.
 *   BAPI4 an edit changes only a message its caller typed (a person's chat message).
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { NotFoundError, RoostError } from "../errors/index.ts";
import type { EventHub } from "../events/index.ts";
import { activeSteps, type Api } from "../protocol/index.ts";
import type { Account, Conversation, Step, Store } from "../store/index.ts";
import { postMessage, type AskDependencies } from "./ask.ts";
import { readJson, text } from "./validation.ts";

type BranchApp = Hono<{ Variables: { account: Account; requestId: string } }>;
type BranchContext = Context<{ Variables: { account: Account; requestId: string } }>;

const clientMessageId = text("clientMessageId", { min: 1, max: 200 });
const regenerateBody = z.strictObject({ clientMessageId });
const editBody = z.strictObject({ text: text("text", { min: 1, max: 100_000 }), clientMessageId });

export interface BranchRouteDependencies {
  store: Store;
  events: EventHub;
  ask: AskDependencies;
  /** BAPI1: the conversation, when the caller started it (app.ts startedConversation). */
  startedConversation(context: BranchContext, id: string): Promise<Conversation>;
}

export function registerBranchRoutes(app: BranchApp, deps: BranchRouteDependencies): void {
  const { store, events } = deps;

  /** BAPI2, BAPI3: the active branch, or the earlier answer to this clientMessageId. */
  const prepare = async (conversation: Conversation, clientId: string) => {
    const summary = await store.latestStepOfKind(conversation.id, "summary");
    const covered =
      summary === undefined
        ? 0
        : (summary.payload as unknown as Api.SummaryPayload).coversThroughSeq;
    const [steps, messages] = await Promise.all([
      store.listSteps(conversation.id, { afterSeq: covered, limit: 100_000 }),
      store.listMessages(conversation.id, { afterSeq: covered, limit: 100_000 }),
    ]);
    const repeat = messages.find((message) => message.clientMessageId === clientId);
    if (repeat !== undefined) return { kind: "repeat", repeat } as const;
    if (events.turnState(conversation.id) === "working" || messages.some((m) => m.takenBy === null))
      throw new RoostError(
        "conflict",
        "the bot is still working on this conversation; stop it first (POST /v1/conversations/{id}/interrupt) or wait for its reply",
      );
    return { kind: "branch", active: activeSteps(steps), covered } as const;
  };
  const posted = (message: { id: string; seq: number }, duplicate: boolean) =>
    ({ messageId: message.id, seq: message.seq, duplicate }) satisfies Api.PostedMessage;
  const send = async (
    context: BranchContext,
    conversation: Conversation,
    input: { text: string; clientMessageId: string; replaces: Api.MessageReplaces },
    source: Api.MessageSource | undefined,
  ) => {
    const { message, created } = await postMessage(deps.ask, {
      conversationId: conversation.id,
      clientMessageId: input.clientMessageId,
      authorAccountId: context.get("account").id,
      text: input.text,
      requestId: context.get("requestId"),
      replaces: input.replaces,
      ...(source === undefined ? {} : { source }),
    });
    return context.json(posted(message, !created), 202);
  };

  app.post("/v1/conversations/:id/regenerate", async (context) => {
    const conversation = await deps.startedConversation(context, context.req.param("id"));
    const body = await readJson(context, regenerateBody);
    const prepared = await prepare(conversation, body.clientMessageId);
    if (prepared.kind === "repeat") return context.json(posted(prepared.repeat, true), 202);
    const last = prepared.active.findLast((step) => step.kind === "message");
    if (last === undefined)
      throw new RoostError(
        "conflict",
        "there is nothing to regenerate: send a message first (POST /v1/conversations/{id}/messages)",
      );
    const payload = last.payload as unknown as Api.MessagePayload;
    return send(
      context,
      conversation,
      {
        text: payload.text,
        clientMessageId: body.clientMessageId,
        replaces: { seq: last.seq, reason: "regenerate" },
      },
      payload.source,
    );
  });

  app.post("/v1/conversations/:id/messages/:messageId/edit", async (context) => {
    const conversation = await deps.startedConversation(context, context.req.param("id"));
    const body = await readJson(context, editBody);
    const messageId = context.req.param("messageId");
    const prepared = await prepare(conversation, body.clientMessageId);
    if (prepared.kind === "repeat") return context.json(posted(prepared.repeat, true), 202);
    const target = prepared.active.find(
      (step): step is Step =>
        step.kind === "message" &&
        (step.payload as unknown as Api.MessagePayload).messageId === messageId,
    );
    if (target === undefined) {
      const stored = (await store.listMessages(conversation.id, { limit: 100_000 })).find(
        (message) => message.id === messageId,
      );
      if (stored === undefined) throw new NotFoundError("message", messageId);
      throw new RoostError(
        "conflict",
        stored.seq <= prepared.covered
          ? "this message is in the part of the conversation already summarised; it can no longer be edited"
          : "this message is in an earlier branch; edit the current version of it instead",
      );
    }
    const payload = target.payload as unknown as Api.MessagePayload;
    const typed = payload.source === undefined || payload.source.kind === "chat";
    if (!typed || payload.authorAccountId !== context.get("account").id)
      throw new RoostError("forbidden", "only a message you typed can be edited"); // BAPI4
    return send(
      context,
      conversation,
      {
        text: body.text,
        clientMessageId: body.clientMessageId,
        replaces: { seq: target.seq, reason: "edit" },
      },
      payload.source,
    );
  });
}
