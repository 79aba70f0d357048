/**
 * Memory you can review and revert (issue "Memory, skills and compaction" §2): a bot's facts by
 * tier, every change as a revision, reverts, the review-mode inbox, and a person's own edits.
 * `/v1/bots/{id}/memory…` is one bot's memory (profile, log, notes; its user facts are shown, not
 * edited there); `/v1/me/memory…` is the account's user facts, shared by all of its bots.
 *
 * Invariants:
 *   MEMAPI1 every route acts only on the caller's own bots and facts: another account's ids answer
 *           404, exactly like ids that do not exist.
 *   MEMAPI2 every change a person makes is a revision with author "user", like the bot's own.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { NotFoundError } from "../errors/index.ts";
import { memoryLimits, type MemoryService } from "../memory/index.ts";
import type { Api } from "../protocol/index.ts";
import type {
  Account,
  Bot,
  MemoryFact,
  MemoryRevision,
  MemoryTier,
  Store,
} from "../store/index.ts";
import { queryInteger, readJson, readQuery, refuseBody, text } from "./validation.ts";
import { ownBotOf } from "./ownership.ts";

const iso = (epochMs: number) => new Date(epochMs).toISOString();

export function memoryFactView(fact: MemoryFact): Api.MemoryFact {
  return {
    id: fact.id,
    tier: fact.tier,
    text: fact.text,
    createdAt: iso(fact.createdAt),
    updatedAt: iso(fact.updatedAt),
    expiresAt: fact.expiresAt === null ? null : iso(fact.expiresAt),
  };
}

export function memoryRevisionView(revision: MemoryRevision): Api.MemoryRevision {
  return {
    id: revision.id,
    factId: revision.factId,
    scope: revision.botId === null ? "user" : revision.tier === "team" ? "team" : "bot",
    tier: revision.tier,
    action: revision.action,
    author: revision.author,
    conversationId: revision.conversationId,
    turnId: revision.turnId,
    before: revision.before,
    after: revision.after,
    status: revision.status,
    byAccountId: revision.byAccountId,
    revertOf: revision.revertOf,
    createdAt: iso(revision.createdAt),
  };
}

const botTier = z.enum(["profile", "log", "note"], {
  error: 'tier must be "profile", "log" or "note" (user facts live under /v1/me/memory)',
});
const addBody = z.strictObject({
  tier: botTier,
  text: text("text", { min: 1, max: 2000 }),
  expiresInHours: z
    .number({ error: "expiresInHours must be a number" })
    .positive()
    .max(2160)
    .optional(),
});
const addUserBody = z.strictObject({ text: text("text", { min: 1, max: 2000 }) });
const patchBody = z.strictObject({ text: text("text", { min: 1, max: 2000 }) });
const revisionsQuery = z.strictObject({
  before: z.string().max(100).optional(),
  limit: queryInteger("limit", { min: 1, max: 200 }).optional(),
  status: z
    .enum(["applied", "proposed", "rejected"], {
      error: 'status must be "applied", "proposed" or "rejected"',
    })
    .optional(),
});

type AppContext = Context<{ Variables: { account: Account } }>;

export function registerMemoryRoutes(
  app: Hono<{ Variables: { account: Account } }>,
  deps: { store: Store; memory: MemoryService },
) {
  const { store, memory } = deps;

  const ownBot = (context: AppContext): Promise<Bot> =>
    ownBotOf(store, context.get("account").id, context.req.param("id") ?? ""); // MEMAPI1
  /** MEMAPI1: a fact of this owner (bot or account) and of a tier it may touch here. */
  const ownFact = async (context: AppContext, botId: string | null) => {
    const id = context.req.param("factId") ?? "";
    const fact = await store.getMemoryFact(id);
    if (
      fact === undefined ||
      fact.removedAt !== null ||
      fact.accountId !== context.get("account").id ||
      fact.botId !== botId
    )
      throw new NotFoundError("memory fact", id);
    return fact;
  };
  const page = async (
    context: AppContext,
    botId: string | null,
  ): Promise<Api.MemoryRevisionPage> => {
    const query = readQuery(context, revisionsQuery);
    const limit = query.limit ?? 50;
    const revisions = await store.listMemoryRevisions({
      accountId: context.get("account").id,
      botId,
      limit: limit + 1,
      ...(query.before === undefined ? {} : { before: query.before }),
      ...(query.status === undefined ? {} : { status: query.status }),
    });
    return {
      revisions: revisions.slice(0, limit).map(memoryRevisionView),
      next: revisions.length > limit ? (revisions[limit - 1]?.id ?? null) : null,
    };
  };
  const decide = async (
    context: AppContext,
    botId: string | null,
    action: "revert" | "accept" | "reject",
  ) => {
    const by = { accountId: context.get("account").id, botId };
    const revisionId = context.req.param("revisionId") ?? "";
    const { revision, fact } =
      action === "revert"
        ? await memory.revert(revisionId, by)
        : await memory.decide(revisionId, action, by);
    return context.json(
      {
        revision: memoryRevisionView(revision),
        fact: memoryFactView(fact),
      } satisfies Api.MemoryChangeResult,
      action === "revert" ? 201 : 200,
    );
  };
  const change = async (
    context: AppContext,
    input: Omit<Parameters<MemoryService["change"]>[0], "accountId" | "author">,
    status: 200 | 201,
  ) => {
    const { revision, fact } = await memory.change({
      ...input,
      accountId: context.get("account").id,
      author: "user", // MEMAPI2
    });
    return context.json(
      {
        revision: memoryRevisionView(revision),
        fact: memoryFactView(fact),
      } satisfies Api.MemoryChangeResult,
      status,
    );
  };

  const tierLimits = Object.fromEntries(
    (["user", "profile", "note"] as const).map((tier) => [
      tier,
      { facts: memoryLimits[tier].maxFacts, chars: memoryLimits[tier].maxChars },
    ]),
  ) as Api.BotMemory["limits"];

  // One bot's memory.
  app.get("/v1/bots/:id/memory", async (context) => {
    const bot = await ownBot(context);
    const view = await memory.view(bot.accountId, bot.id, { logLimit: 100 });
    return context.json({
      user: view.user.map(memoryFactView),
      profile: view.profile.map(memoryFactView),
      note: view.note.map(memoryFactView),
      log: view.log.map(memoryFactView),
      memoryReview: bot.memoryReview,
      limits: tierLimits,
    } satisfies Api.BotMemory);
  });
  app.get("/v1/bots/:id/memory/revisions", async (context) =>
    context.json(await page(context, (await ownBot(context)).id)),
  );
  app.post("/v1/bots/:id/memory", async (context) => {
    const bot = await ownBot(context);
    const body = await readJson(context, addBody);
    return change(
      context,
      {
        botId: bot.id,
        tier: body.tier,
        action: "add",
        text: body.text,
        ...(body.expiresInHours === undefined ? {} : { ttlMs: body.expiresInHours * 3600_000 }),
      },
      201,
    );
  });
  app.patch("/v1/bots/:id/memory/:factId", async (context) => {
    const bot = await ownBot(context);
    const fact = await ownFact(context, bot.id);
    const body = await readJson(context, patchBody);
    return change(
      context,
      { botId: bot.id, tier: fact.tier, action: "replace", factId: fact.id, text: body.text },
      200,
    );
  });
  app.delete("/v1/bots/:id/memory/:factId", async (context) => {
    const bot = await ownBot(context);
    const fact = await ownFact(context, bot.id);
    await refuseBody(context, "DELETE /v1/bots/{id}/memory/{factId}");
    return change(
      context,
      { botId: bot.id, tier: fact.tier, action: "remove", factId: fact.id },
      200,
    );
  });
  for (const action of ["revert", "accept", "reject"] as const) {
    app.post(`/v1/bots/:id/memory/revisions/:revisionId/${action}`, async (context) =>
      decide(context, (await ownBot(context)).id, action),
    );
  }

  // The account's user facts, shared by all of its bots (they are the bots' "user" tier).
  const userTier: MemoryTier = "user";
  app.get("/v1/me/memory", async (context) => {
    const facts = await store.listMemoryFacts({
      accountId: context.get("account").id,
      botId: null,
      tiers: [userTier],
    });
    return context.json({ user: facts.map(memoryFactView) } satisfies Api.UserMemory);
  });
  app.get("/v1/me/memory/revisions", async (context) => context.json(await page(context, null)));
  app.post("/v1/me/memory", async (context) => {
    const body = await readJson(context, addUserBody);
    // The user tier ignores the bot; any id of the account would do, none is needed.
    return change(context, { botId: "", tier: userTier, action: "add", text: body.text }, 201);
  });
  app.patch("/v1/me/memory/:factId", async (context) => {
    const fact = await ownFact(context, null);
    const body = await readJson(context, patchBody);
    return change(
      context,
      { botId: "", tier: userTier, action: "replace", factId: fact.id, text: body.text },
      200,
    );
  });
  app.delete("/v1/me/memory/:factId", async (context) => {
    const fact = await ownFact(context, null);
    await refuseBody(context, "DELETE /v1/me/memory/{factId}");
    return change(context, { botId: "", tier: userTier, action: "remove", factId: fact.id }, 200);
  });
  for (const action of ["revert", "accept", "reject"] as const) {
    app.post(`/v1/me/memory/revisions/:revisionId/${action}`, async (context) =>
      decide(context, null, action),
    );
  }
}
