/**
 * The routines API (docs/api.md "Routines", docs/routines.md): a bot's routines, their runs, the
 * webhook that starts one from outside, and the account settings routines read.
 *
 * Invariants:
 *   RAPI1 every route but the webhook acts on the caller's own routines only: another account's
 *         routine (or bot) answers 404, exactly like a missing one.
 *   RAPI2 the webhook is authenticated by the routine's own key, never by an API token; a wrong
 *         or missing key and an unknown routine answer the same 401, so ids cannot be probed.
 *   RAPI3 every webhook call, accepted or refused, writes one audit entry; a refused call stores
 *         nothing else, and an accepted one is handed to the scheduler durably before the 202.
 *   RAPI4 webhook calls are limited per routine (429 with retry-after) before the key is checked,
 *         and bodies to `webhookMaxBodyBytes` (413), counted as they arrive.
 */
import type { Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { z } from "zod";
import { RoostError, toRoostError } from "../errors/index.ts";
import { newId } from "../ids.ts";
import type { Api } from "../protocol/index.ts";
import {
  previewNextRun,
  webhookKeyMatches,
  type RoutineInput,
  type RoutineService,
} from "../routines/index.ts";
import type { Account, Routine, Store } from "../store/index.ts";
import { createRequestLimiter } from "./limits.ts";
import { readJson, refuseBody, text } from "./validation.ts";

export const webhookPathPrefix = "/v1/hooks/";

const modelSpec = z
  .string()
  .min(1)
  .max(200)
  .regex(/^(demo|[a-z-]+:[^\s]+)$/, {
    error: 'triageModel must be "demo" or "provider:model", e.g. "openai:gpt-4.1-mini"',
  });
const timezone = z.string().min(1).max(100);
const atTime = z
  .string()
  .regex(/^([01]\d|2[0-3]):[0-5]\d$/, { error: 'at must be "HH:MM", e.g. "09:00"' });
const triggerSchema = z.union(
  [
    z.strictObject({
      type: z.literal("schedule"),
      cron: z.string().min(1).max(200),
      timezone: timezone.optional(),
    }),
    z.strictObject({
      type: z.literal("schedule"),
      everyMs: z
        .int({ error: "everyMs must be a whole number of milliseconds" })
        .positive()
        .max(366 * 86_400_000),
    }),
    z.strictObject({
      type: z.literal("schedule"),
      preset: z.enum(["hourly", "daily", "weekdays", "weekly", "monthly"]),
      at: atTime.optional(),
      minute: z.int().min(0).max(59).optional(),
      day: z.enum(["sun", "mon", "tue", "wed", "thu", "fri", "sat"]).optional(),
      dayOfMonth: z
        .int()
        .min(1)
        .max(28, { error: "dayOfMonth is 1–28, so every month has it" })
        .optional(),
      timezone: timezone.optional(),
    }),
    z.strictObject({ type: z.literal("webhook") }),
    // A Slack listener (docs/slack.md "Listeners").
    z.strictObject({
      type: z.literal("slack"),
      phrase: z
        .string({ error: "phrase must be text" })
        .trim()
        .min(1, {
          error: "phrase must not be empty; leave it out to hear every new top-level message",
        })
        .max(200, { error: "phrase is at most 200 characters" })
        .optional(),
    }),
  ],
  {
    error:
      'trigger must be {"type":"schedule","cron":"0 9 * * 1-5","timezone"?}, {"type":"schedule","everyMs":N}, {"type":"schedule","preset":"hourly|daily|weekdays|weekly|monthly",...}, {"type":"webhook"} or {"type":"slack","phrase"?}',
  },
);
const targetSchema = z.union(
  [
    z.strictObject({ kind: z.literal("new_conversation") }),
    z.strictObject({ kind: z.literal("conversation"), conversationId: z.string().min(1).max(100) }),
  ],
  {
    error:
      'target must be {"kind":"new_conversation"} or {"kind":"conversation","conversationId":"..."}',
  },
);
const positive = z.number().positive().finite();
const budgetSchema = z
  .strictObject({
    tokensPerDay: z.int().positive().optional(),
    tokensPerMonth: z.int().positive().optional(),
    costPerDay: positive.optional(),
    costPerMonth: positive.optional(),
  })
  .refine((budget) => Object.keys(budget).length > 0, {
    error:
      "budget names at least one of tokensPerDay, tokensPerMonth, costPerDay, costPerMonth (or is null)",
  })
  .nullable();
const fields = {
  name: text("name", { min: 1, max: 80 }),
  instruction: text("instruction", { min: 1, max: 20_000 }),
  trigger: triggerSchema,
  target: targetSchema,
  enabled: z.boolean({ error: "enabled must be true or false" }),
  misfire: z.enum(["skip", "once", "catch_up"], {
    error: "misfire must be skip, once or catch_up",
  }),
  budget: budgetSchema,
  triageModel: modelSpec.nullable(),
};
const createBody = z.strictObject({
  name: fields.name,
  instruction: fields.instruction,
  trigger: fields.trigger,
  target: fields.target.optional(),
  enabled: fields.enabled.optional(),
  misfire: fields.misfire.optional(),
  budget: fields.budget.optional(),
  triageModel: fields.triageModel.optional(),
});
const patchBody = z
  .strictObject({
    name: fields.name.optional(),
    instruction: fields.instruction.optional(),
    trigger: fields.trigger.optional(),
    target: fields.target.optional(),
    enabled: fields.enabled.optional(),
    misfire: fields.misfire.optional(),
    budget: fields.budget.optional(),
    triageModel: fields.triageModel.optional(),
  })
  .refine((body) => Object.keys(body).length > 0, {
    error:
      "send at least one of name, instruction, trigger, target, enabled, misfire, budget, triageModel",
  });
const settingsBody = z.strictObject({ timezone: timezone.nullable() });
const emptyBody = z.strictObject({}).optional();

type AppContext = Context<{ Variables: { account: Account } }>;

export interface RoutineRouteDependencies {
  routines: RoutineService;
  store: Store;
  /** Validates a model spec (the triage model); throws saying how to fix it. */
  checkModel(spec: string): void;
  /** Where webhook URLs point; by default the origin the request came in on. */
  publicUrl?: string;
  webhookMaxBodyBytes: number;
  webhookPerMinute: number;
  clock?: () => number;
}

/** The webhook route: registered before the API-token check (RAPI2). */
export function registerWebhookRoute(app: Hono, deps: RoutineRouteDependencies) {
  const { store, routines } = deps;
  const limiter = createRequestLimiter(
    {
      requestsPerMinute: deps.webhookPerMinute,
      requestBurst: deps.webhookPerMinute,
      eventStreamsPerAccount: 1,
    },
    deps.clock ?? Date.now,
  );
  const audit = async (
    routineId: string,
    routine: Routine | undefined,
    outcome: string,
    detail: Record<string, unknown> = {},
  ) => {
    await store.audit({
      accountId: routine?.accountId ?? null,
      action: "routine.webhook",
      target: routineId,
      detail: { outcome, ...detail },
    }); // RAPI3
  };
  const refuse = (
    code:
      | "unauthenticated"
      | "payload_too_large"
      | "invalid_json"
      | "conflict"
      | "unsupported_media_type",
    message: string,
  ) => new RoostError(code, message);

  app.post(
    `${webhookPathPrefix}:id`,
    async (context, next) => {
      const id = context.req.param("id");
      try {
        limiter.take(id); // RAPI4: before anything else
      } catch (error) {
        const limited = toRoostError(error);
        await audit(id, undefined, "rate_limited");
        throw new RoostError(
          "rate_limited",
          `too many calls to this routine's webhook (at most ${deps.webhookPerMinute} a minute); retry later`,
          {
            ...(limited.retryAfterMs === undefined ? {} : { retryAfterMs: limited.retryAfterMs }),
            details: limited.details ?? {},
          },
        );
      }
      await next();
    },
    bodyLimit({
      maxSize: deps.webhookMaxBodyBytes,
      onError: async (context) => {
        const id = context.req.param("id") ?? "";
        await audit(id, undefined, "too_large", { limit: deps.webhookMaxBodyBytes });
        throw refuse(
          "payload_too_large",
          `a webhook body is at most ${deps.webhookMaxBodyBytes} bytes; send less`,
        );
      },
    }),
    async (context) => {
      const id = context.req.param("id");
      const routine = await store.getRoutine(id);
      const header = context.req.header("authorization");
      const presented =
        header === undefined ? null : (/^Bearer\s+(\S+)$/i.exec(header)?.[1] ?? null);
      // RAPI2: the same answer for no key, a wrong key and no such webhook.
      if (
        presented === null ||
        routine === undefined ||
        !webhookKeyMatches(presented, routine.webhookKeyHash)
      ) {
        await audit(id, routine, presented === null ? "no_key" : "bad_key");
        throw refuse(
          "unauthenticated",
          "send the routine's webhook key as `Authorization: Bearer <key>` (shown when the webhook was made; rotate it with POST /v1/routines/{id}/webhook/rotate)",
        );
      }
      if (!/^application\/json\b/i.test(context.req.header("content-type") ?? "")) {
        await audit(id, routine, "bad_media_type");
        throw refuse(
          "unsupported_media_type",
          "send the body as JSON with the header Content-Type: application/json",
        );
      }
      const raw = await context.req.text();
      let payload: unknown;
      try {
        payload = raw === "" ? {} : JSON.parse(raw);
      } catch (error) {
        await audit(id, routine, "bad_json", { bytes: raw.length });
        throw refuse("invalid_json", `the body is not valid JSON: ${(error as Error).message}`);
      }
      if (!routine.enabled) {
        await audit(id, routine, "disabled");
        throw refuse(
          "conflict",
          'this routine is disabled; enable it (PATCH /v1/routines/{id} {"enabled":true}) to accept calls',
        );
      }
      const runId = newId("rrun");
      try {
        await routines.startWebhookRun(routine.id, {
          runId,
          kind: "webhook",
          scheduledAt: null,
          payload,
        });
      } catch (error) {
        await audit(id, routine, "unavailable");
        throw error;
      }
      await audit(id, routine, "accepted", { runId, bytes: raw.length });
      return context.json({ runId }, 202);
    },
  );
}

export function registerRoutineRoutes(
  app: Hono<{ Variables: { account: Account } }>,
  deps: RoutineRouteDependencies,
) {
  const { routines } = deps;
  const accountOf = (context: AppContext) => context.get("account").id; // RAPI1
  const baseUrl = (context: AppContext) =>
    (deps.publicUrl ?? new URL(context.req.url).origin).replace(/\/$/, "");

  const view = async (
    context: AppContext,
    routine: Routine,
    key: string | null = null,
  ): Promise<Api.Routine> => {
    const { timezone, paused } = await routines.describe(routine);
    const next = previewNextRun(routine, timezone, Date.now());
    return {
      id: routine.id,
      botId: routine.botId,
      name: routine.name,
      instruction: routine.instruction,
      trigger: routine.trigger,
      target: routine.target,
      enabled: routine.enabled,
      misfire: routine.misfire,
      budget: routine.budget,
      triageModel: routine.triageModel,
      timezone,
      nextRunAt: next === null || paused ? null : new Date(next).toISOString(),
      paused,
      webhook:
        routine.trigger.type === "webhook"
          ? { url: `${baseUrl(context)}${webhookPathPrefix}${routine.id}`, key }
          : null,
      createdAt: new Date(routine.createdAt).toISOString(),
      updatedAt: new Date(routine.updatedAt).toISOString(),
    };
  };
  const checkTriage = (spec: string | null | undefined) => {
    if (spec === null || spec === undefined || spec === "demo") return;
    try {
      deps.checkModel(spec);
    } catch (error) {
      const roost = toRoostError(error);
      if (roost.code !== "config_invalid") throw error;
      throw new RoostError("invalid_request", `field "triageModel": ${roost.message}`, {
        details: { issues: [{ path: "triageModel", message: roost.message }] },
      });
    }
  };

  app.post("/v1/bots/:id/routines", async (context) => {
    const body = await readJson(context, createBody);
    checkTriage(body.triageModel);
    const input: RoutineInput = {
      name: body.name,
      instruction: body.instruction,
      trigger: body.trigger,
      target: body.target ?? { kind: "new_conversation" },
      enabled: body.enabled ?? true,
      misfire: body.misfire ?? "once",
      budget: body.budget ?? null,
      triageModel: body.triageModel ?? null,
    };
    const { routine, key } = await routines.create(
      accountOf(context),
      context.req.param("id"),
      input,
    );
    return context.json(await view(context, routine, key), 201);
  });

  app.get("/v1/bots/:id/routines", async (context) => {
    const list = await routines.list(accountOf(context), context.req.param("id"));
    return context.json({
      routines: await Promise.all(list.map((routine) => view(context, routine))),
    } satisfies Api.RoutineList);
  });

  // Before /v1/routines/:id, which would take "resume" for an id.
  app.post("/v1/routines/resume", async (context) => {
    if (context.req.header("content-type") !== undefined) await readJson(context, emptyBody);
    return context.json({
      resumed: await routines.resume(accountOf(context)),
    } satisfies Api.RoutinesResumed);
  });

  app.get("/v1/routines/:id", async (context) =>
    context.json(
      await view(context, await routines.get(accountOf(context), context.req.param("id"))),
    ),
  );

  app.patch("/v1/routines/:id", async (context) => {
    const id = context.req.param("id");
    await routines.get(accountOf(context), id); // RAPI1 before reading the body
    const body = await readJson(context, patchBody);
    checkTriage(body.triageModel);
    const { routine, key } = await routines.update(accountOf(context), id, body);
    return context.json(await view(context, routine, key));
  });

  app.delete("/v1/routines/:id", async (context) => {
    const id = context.req.param("id");
    await routines.get(accountOf(context), id);
    await refuseBody(context, "DELETE /v1/routines/{id}");
    await routines.remove(accountOf(context), id);
    return context.body(null, 204);
  });

  app.post("/v1/routines/:id/run", async (context) => {
    const id = context.req.param("id");
    await routines.get(accountOf(context), id);
    if (context.req.header("content-type") !== undefined) await readJson(context, emptyBody);
    return context.json(
      (await routines.runNow(accountOf(context), id)) satisfies Api.StartedRun,
      202,
    );
  });

  app.get("/v1/routines/:id/runs", async (context) =>
    context.json({
      runs: await routines.runs(accountOf(context), context.req.param("id")),
    } satisfies Api.RoutineRunList),
  );

  app.post("/v1/routines/:id/webhook/rotate", async (context) => {
    const id = context.req.param("id");
    await routines.get(accountOf(context), id);
    if (context.req.header("content-type") !== undefined) await readJson(context, emptyBody);
    const { routine, key } = await routines.rotateKey(accountOf(context), id);
    return context.json(await view(context, routine, key));
  });

  app.get("/v1/me/settings", async (context) =>
    context.json((await routines.settings(accountOf(context))) satisfies Api.AccountSettings),
  );
  app.patch("/v1/me/settings", async (context) => {
    const body = await readJson(context, settingsBody);
    return context.json(
      (await routines.setTimezone(accountOf(context), body.timezone)) satisfies Api.AccountSettings,
    );
  });
}
