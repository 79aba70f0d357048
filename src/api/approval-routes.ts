/**
 * Tool policy and approvals (docs/api.md "Tool policy and approvals", docs/approvals.md).
 *
 * Invariants:
 *   APRAPI1 every route reads and writes the caller's own bots and approvals only: another
 *           account's bot or approval answers 404 exactly like a missing one (APR3).
 *   APRAPI2 a policy or a decision is validated whole before anything is stored: a bad one is a
 *           400 that names the field and says how to fix it, and nothing changes.
 *   APRAPI3 answering an approval that is no longer pending (answered, expired, or lost a race)
 *           is a 409 that says its state; it changes nothing.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import type { ApprovalsService } from "../policy/index.ts";
import type { Account, Store } from "../store/index.ts";
import { ownBotOf } from "./ownership.ts";
import { readJson, readQuery } from "./validation.ts";

type ApprovalApp = Hono<{ Variables: { account: Account } }>;

const listQuery = z.strictObject({
  state: z
    .enum(["pending", "approved", "denied", "expired"], {
      error: "state must be one of pending, approved, denied, expired",
    })
    .optional(),
});

const decisionBody = z.strictObject({
  decision: z.enum(["approve", "deny"], { error: 'decision must be "approve" or "deny"' }),
  remember: z
    .string({ error: 'remember must be a pattern (text), e.g. "git push origin *"' })
    .optional(),
});

export function registerApprovalRoutes(
  app: ApprovalApp,
  deps: { store: Store; approvals: ApprovalsService },
): void {
  const { store, approvals } = deps;
  // APRAPI1
  const ownBot = (context: Context<{ Variables: { account: Account } }>, id: string) =>
    ownBotOf(store, context.get("account").id, id);

  app.get("/v1/bots/:id/tool-policy", async (context) => {
    const bot = await ownBot(context, context.req.param("id"));
    return context.json(await approvals.toolPolicy(bot.id));
  });

  app.put("/v1/bots/:id/tool-policy", async (context) => {
    const bot = await ownBot(context, context.req.param("id"));
    // APRAPI2: parseToolPolicy throws before anything is stored.
    const input = await readJson(context, z.unknown());
    return context.json(await approvals.setToolPolicy(bot.id, context.get("account").id, input));
  });

  app.get("/v1/approvals", async (context) => {
    const query = readQuery(context, listQuery);
    return context.json({
      approvals: await approvals.list(context.get("account").id, query.state),
    });
  });

  app.get("/v1/approvals/:id", async (context) =>
    context.json(await approvals.get(context.get("account").id, context.req.param("id"))),
  );

  app.post("/v1/approvals/:id", async (context) => {
    const body = await readJson(context, decisionBody); // APRAPI2
    const decision =
      body.remember === undefined
        ? { decision: body.decision }
        : { decision: body.decision, remember: body.remember };
    return context.json(
      await approvals.decide(context.get("account").id, context.req.param("id"), decision),
    );
  });
}
