/**
 * The results API (docs/api.md "Drafts", "Notifications", "The account's events"; docs/results.md):
 * drafts to send or discard, the owner's notifications and webhooks, how far the owner has read
 * each conversation, and the account's live stream.
 *
 * Invariants:
 *   RAPI1 every route acts on the caller's own drafts, notifications and conversations: another
 *         account's id answers 404, exactly like a missing one (store RES4).
 *   RAPI2 a send runs in the durable engine (drafts/send.ts); two sends at once share one
 *         invocation (DRF2) and a send racing a discard loses or wins whole (RES2).
 *   RAPI3 a webhook URL is checked before it is stored (OWH1) and its secret is shown once.
 *   RAPI4 the account stream carries only the caller's events: its conversations' activity, its
 *         notifications and drafts.
 */
import { randomBytes } from "node:crypto";
import type { Context, Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import { NotFoundError, RoostError } from "../errors/index.ts";
import type { AccountEvent, ConversationEvent, EventHub } from "../events/index.ts";
import { draftView, type DraftSender } from "../drafts/index.ts";
import { notificationView, type OwnerWebhookClient } from "../notifications/index.ts";
import type { Api } from "../protocol/index.ts";
import type {
  Account,
  Conversation,
  DraftStatus,
  OwnerWebhookRecord,
  Store,
} from "../store/index.ts";
import { mayUseConversation } from "../teams/index.ts";
import { queryInteger, readJson, readQuery, refuseBody } from "./validation.ts";

export interface ResultsService {
  drafts: DraftSender;
  webhooks: OwnerWebhookClient;
}

type Variables = { account: Account; requestId: string };
type AppContext = Context<{ Variables: Variables }>;

const draftStatuses = ["pending", "sending", "sent", "failed", "discarded"] as const;
const draftsQuery = z.strictObject({
  status: z
    .enum(draftStatuses, { error: `status must be one of ${draftStatuses.join(", ")}` })
    .optional(),
  conversationId: z.string().max(100).optional(),
  limit: queryInteger("limit", { min: 1, max: 200 }).optional(),
});
const conversationDraftsQuery = draftsQuery.omit({ conversationId: true });
const notificationsQuery = z.strictObject({
  unread: z.enum(["true", "false"], { error: "unread must be true or false" }).optional(),
  limit: queryInteger("limit", { min: 1, max: 200 }).optional(),
  before: z.iso
    .datetime({ error: "before must be an ISO time, as in a notification's createdAt" })
    .optional(),
});
const webhookBody = z.strictObject({
  url: z.string({ error: "url is required: the http(s) URL Roost posts to" }),
});
const markReadBody = z.union(
  [
    z.strictObject({ ids: z.array(z.string().max(300)).min(1).max(500) }),
    z.strictObject({ conversationId: z.string().min(1).max(100) }),
    z.strictObject({ all: z.literal(true) }),
  ],
  { error: 'send {"ids": [...]}, {"conversationId": "..."} or {"all": true}' },
);
const seenBody = z.strictObject({
  seq: z.number({ error: "seq is required: the last step seq the owner has seen" }).int().min(0),
});
const sendBody = z.strictObject({}).optional();
/** Conversations whose owner the account streams remember (a conversation's owner never changes). */
const maxKnownOwners = 10_000;

/** The routes of this file that take query parameters (app.ts API4 hands them over). */
export function isResultsQueryRoute(path: string): boolean {
  return (
    path === "/v1/drafts" ||
    path === "/v1/notifications" ||
    /^\/v1\/conversations\/[^/]+\/drafts$/.test(path)
  );
}

function webhookView(webhook: OwnerWebhookRecord): Api.OwnerWebhook {
  return {
    purpose: webhook.purpose,
    url: webhook.url,
    createdAt: new Date(webhook.createdAt).toISOString(),
    updatedAt: new Date(webhook.updatedAt).toISOString(),
  };
}

export function registerResultsRoutes(
  app: Hono<{ Variables: Variables }>,
  deps: {
    store: Store;
    events: EventHub;
    results: ResultsService;
    /** The account's streams (app.ts API3): acquire answers a release, or throws 429. */
    acquireStream(accountId: string): () => void;
    keepAliveMs: number;
  },
) {
  const { store, events, results } = deps;
  // Which account a conversation belongs to, shared by this node's account streams: every stream
  // sees every conversation's events, and one lookup per conversation serves them all.
  const owners = new Map<string, Promise<string | undefined>>();
  const ownerOf = (conversationId: string) => {
    let owner = owners.get(conversationId);
    if (owner === undefined) {
      owner = store
        .getConversation(conversationId)
        .then((conversation) => conversation?.accountId)
        .catch(() => {
          owners.delete(conversationId); // a store outage: ask again next time
          return undefined;
        });
      if (owners.size >= maxKnownOwners) owners.delete(owners.keys().next().value!);
      owners.set(conversationId, owner);
    }
    return owner;
  };
  const accountOf = (context: AppContext) => context.get("account");
  const ownConversation = async (context: AppContext, id: string): Promise<Conversation> => {
    const conversation = await store.getConversation(id);
    if (
      conversation === undefined ||
      conversation.accountId !== accountOf(context).id ||
      !(await mayUseConversation(store, accountOf(context).id, conversation)) // TACC3
    )
      throw new NotFoundError("conversation", id); // RAPI1
    return conversation;
  };
  const ownDraft = async (context: AppContext, id: string) => {
    const draft = await store.getDraft(accountOf(context).id, id);
    if (draft === undefined) throw new NotFoundError("draft", id); // RAPI1
    return draft;
  };
  const listDrafts = async (
    context: AppContext,
    query: { status?: DraftStatus; limit?: number },
    conversationId?: string,
  ) => {
    const drafts = await store.listDrafts(accountOf(context).id, {
      ...query,
      ...(conversationId === undefined ? {} : { conversationId }),
    });
    return context.json({ drafts: drafts.map(draftView) } satisfies Api.DraftList);
  };

  // The owner's webhooks: one for notifications, one that drafts are sent through.
  for (const purpose of ["notifications", "drafts"] as const) {
    const path = `/v1/${purpose}/webhook`;
    app.put(path, async (context) => {
      const body = await readJson(context, webhookBody);
      const url = results.webhooks.checkUrl(body.url.trim()); // RAPI3
      const secret = `whsec_${randomBytes(24).toString("base64url")}`;
      const stored = await store.setOwnerWebhook({
        accountId: accountOf(context).id,
        purpose,
        url: url.toString(),
        secret,
      });
      return context.json({ ...webhookView(stored), secret } satisfies Api.OwnerWebhookCreated);
    });
    app.get(path, async (context) => {
      const webhook = await store.getOwnerWebhook(accountOf(context).id, purpose);
      if (webhook === undefined)
        throw new RoostError(
          "not_found",
          `no ${purpose} webhook is set (set one with PUT ${path})`,
        );
      return context.json(webhookView(webhook));
    });
    app.delete(path, async (context) => {
      await refuseBody(context, `DELETE ${path}`);
      const deleted = await store.deleteOwnerWebhook(accountOf(context).id, purpose);
      if (!deleted) throw new RoostError("not_found", `no ${purpose} webhook is set`);
      return context.body(null, 204);
    });
  }

  app.get("/v1/drafts", async (context) => {
    const { conversationId, ...query } = readQuery(context, draftsQuery);
    if (conversationId !== undefined) await ownConversation(context, conversationId);
    return listDrafts(context, query, conversationId);
  });

  app.get("/v1/conversations/:id/drafts", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    return listDrafts(context, readQuery(context, conversationDraftsQuery), conversation.id);
  });

  app.get("/v1/drafts/:id", async (context) =>
    context.json(draftView(await ownDraft(context, context.req.param("id")))),
  );

  app.post("/v1/drafts/:id/send", async (context) => {
    const draft = await ownDraft(context, context.req.param("id"));
    if (context.req.header("content-type") !== undefined) await readJson(context, sendBody);
    if (draft.status !== "pending" && draft.status !== "failed" && draft.status !== "sending")
      throw new RoostError(
        "conflict",
        `draft ${draft.id} was ${draft.status} already; there is nothing to send`,
        {
          details: { draftId: draft.id, status: draft.status },
        },
      );
    // RAPI2: a send already running is joined (same key) rather than refused.
    const attempt = draft.status === "sending" ? draft.sendAttempts - 1 : draft.sendAttempts;
    const result = await results.drafts.send(
      { accountId: draft.accountId, draftId: draft.id },
      attempt,
    );
    if (!result.ok)
      throw new RoostError(
        result.code,
        result.message,
        result.details === undefined ? {} : { details: result.details },
      );
    return context.json(result.draft);
  });

  app.post("/v1/drafts/:id/discard", async (context) => {
    const draft = await ownDraft(context, context.req.param("id"));
    if (context.req.header("content-type") !== undefined) await readJson(context, sendBody);
    const account = accountOf(context);
    const discarded = await store.discardDraft({
      accountId: account.id,
      id: draft.id,
      actorAccountId: account.id,
    });
    events.publishAccount({
      type: "draft",
      accountId: account.id,
      draftId: discarded.id,
      conversationId: discarded.conversationId,
      status: discarded.status,
    });
    return context.json(draftView(discarded));
  });

  app.get("/v1/notifications", async (context) => {
    const query = readQuery(context, notificationsQuery);
    const accountId = accountOf(context).id;
    const notifications = await store.listNotifications(accountId, {
      unread: query.unread === "true",
      limit: query.limit ?? 50,
      ...(query.before === undefined ? {} : { before: Date.parse(query.before) }),
    });
    return context.json({
      notifications: notifications.map(notificationView),
      unread: await store.countUnreadNotifications(accountId),
    } satisfies Api.NotificationList);
  });

  app.post("/v1/notifications/read", async (context) => {
    const body = await readJson(context, markReadBody);
    const marked = await store.markNotificationsRead(accountOf(context).id, body);
    return context.json({ marked } satisfies Api.NotificationsRead);
  });

  app.post("/v1/notifications/:id/read", async (context) => {
    const accountId = accountOf(context).id;
    const id = context.req.param("id");
    if ((await store.getNotification(accountId, id)) === undefined)
      throw new NotFoundError("notification", id); // RAPI1
    const marked = await store.markNotificationsRead(accountId, { ids: [id] });
    return context.json({ marked } satisfies Api.NotificationsRead);
  });

  // The owner has read the conversation up to `seq`: its notifications are read too.
  app.post("/v1/conversations/:id/seen", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    const body = await readJson(context, seenBody);
    const accountId = accountOf(context).id;
    const seq = Math.min(body.seq, conversation.lastSeq);
    await store.markConversationSeen(accountId, conversation.id, seq);
    const marked = await store.markNotificationsRead(accountId, {
      conversationId: conversation.id,
    });
    return context.json({ seq, notificationsRead: marked } satisfies Api.ConversationSeen);
  });

  app.get("/v1/events", async (context) => {
    const account = accountOf(context);
    const release = deps.acquireStream(account.id);
    return streamSSE(context, async (stream) => {
      const queue: Api.AccountStreamEvent[] = [];
      let wake: (() => void) | undefined;
      const push = (event: Api.AccountStreamEvent) => {
        queue.push(event);
        wake?.();
      };
      // RAPI4: a conversation's events pass when the conversation is the account's.
      const isOwn = async (conversationId: string) =>
        (await ownerOf(conversationId)) === account.id;
      const onConversation = (event: ConversationEvent) => {
        if (event.type !== "changed" && event.type !== "turn") return;
        void isOwn(event.conversationId).then((own) => {
          if (!own) return;
          push(
            event.type === "changed"
              ? { type: "activity", conversationId: event.conversationId, seq: event.seq }
              : { type: "activity", conversationId: event.conversationId, state: event.state },
          );
        });
      };
      const onAccount = (event: AccountEvent) => {
        if (event.type === "notification")
          push({
            type: "notification",
            notification: event.notification as unknown as Api.Notification,
          });
        else if (event.type === "draft")
          push({
            type: "draft",
            draftId: event.draftId,
            conversationId: event.conversationId,
            status: event.status as DraftStatus,
          });
      };
      const unsubscribeAll = events.subscribeAll(onConversation);
      const unsubscribeAccount = events.subscribeAccount(account.id, onAccount);
      let ended = false;
      // Events from other nodes may have been missed: the client reconnects and reloads.
      const unsubscribeResync = events.onResync(() => {
        ended = true;
        wake?.();
      });
      stream.onAbort(() => wake?.());
      try {
        await stream.writeSSE({
          event: "hello",
          data: JSON.stringify({ at: new Date().toISOString() }),
        });
        while (!stream.aborted && !ended) {
          const event = queue.shift();
          if (event === undefined) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, deps.keepAliveMs);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            wake = undefined;
            if (queue.length === 0 && !stream.aborted && !ended)
              await stream.write(": keepalive\n\n");
            continue;
          }
          const { type, ...data } = event;
          await stream.writeSSE({ event: type, data: JSON.stringify(data) });
        }
      } finally {
        unsubscribeAll();
        unsubscribeAccount();
        unsubscribeResync();
        release();
      }
    });
  });
}
