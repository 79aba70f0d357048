/**
 * Model providers and the model picker (docs/api.md "Model providers", docs/models.md "From the
 * web app", decision 0035), and the admin's accounts list.
 *
 * Invariants:
 *   PAPI1 `/v1/admin/…` answers only an admin account: anyone else gets 403, before any body is
 *         read or any provider is called.
 *   PAPI2 no answer holds a stored key (models/ MPS2): views carry `key.set` and `key.lastFour`.
 *   PAPI3 bad input is a 400 that says how to fix it and stores nothing (MPS4 for base URLs).
 *   PAPI4 one connection test per provider at a time: a second while one runs shares its answer,
 *         so repeated clicks (or a flood) make one call to the provider.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { RoostError } from "../errors/index.ts";
import type { ProviderSettings } from "../models/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Account, Store } from "../store/index.ts";
import { readJson, refuseBody, text } from "./validation.ts";

const putBody = z.strictObject({
  kind: z.enum(["openai", "anthropic", "xai", "openai-compatible"], {
    error: 'kind must be "openai", "anthropic", "xai" or "openai-compatible"',
  }),
  label: text("label", { min: 1, max: 80 }).optional(),
  baseUrl: z
    .string({ error: "baseUrl is the server's API root as a string, or null" })
    .nullable()
    .optional(),
  apiKey: z
    .string({ error: "apiKey is the key as a string, or null to remove it" })
    .nullable()
    .optional(),
});

type ProvidersApp = Hono<{ Variables: { account: Account } }>;
type ProvidersContext = Context<{ Variables: { account: Account } }>;

export interface ProviderRouteDependencies {
  store: Store;
  providers: ProviderSettings;
  /** The platform default model (the API's `defaultModel`). */
  defaultModel(): { id: string; isDemo: boolean };
}

export function registerProviderRoutes(app: ProvidersApp, deps: ProviderRouteDependencies): void {
  const { store, providers } = deps;
  const requireAdmin = (context: ProvidersContext) => {
    if (!context.get("account").isAdmin)
      throw new RoostError(
        "forbidden",
        "only an admin account manages model providers and accounts; ask your Roost admin",
      ); // PAPI1
  };
  const tests = new Map<string, Promise<Api.ProviderTestResult>>();

  app.get("/v1/admin/providers", async (context) => {
    requireAdmin(context);
    await providers.load();
    const fallback = deps.defaultModel();
    return context.json({
      providers: providers.list(),
      defaultModel: { spec: fallback.id, isDemo: fallback.isDemo },
    } satisfies Api.ModelProviderList);
  });

  app.put("/v1/admin/providers/:id", async (context) => {
    requireAdmin(context);
    const body = await readJson(context, putBody); // PAPI3
    const view = await providers.put(context.req.param("id"), body, context.get("account").id);
    return context.json(view satisfies Api.ModelProviderView);
  });

  app.delete("/v1/admin/providers/:id", async (context) => {
    requireAdmin(context);
    await refuseBody(context, "DELETE /v1/admin/providers/{id}");
    await providers.remove(context.req.param("id"), context.get("account").id);
    return context.body(null, 204);
  });

  app.post("/v1/admin/providers/:id/test", async (context) => {
    requireAdmin(context);
    await refuseBody(context, "POST /v1/admin/providers/{id}/test");
    const id = context.req.param("id");
    let running = tests.get(id); // PAPI4
    if (running === undefined) {
      running = providers.test(id).finally(() => tests.delete(id));
      tests.set(id, running);
    }
    return context.json((await running) satisfies Api.ProviderTestResult);
  });

  app.get("/v1/providers/models", async (context) => {
    await providers.load();
    const fallback = deps.defaultModel();
    const groups = await providers.modelGroups();
    return context.json({
      platformDefault: {
        spec: fallback.id,
        isDemo: fallback.isDemo,
        label: fallback.isDemo
          ? "Platform default (demo model, offline)"
          : `Platform default (${fallback.id})`,
      },
      // Offered once: when the default is the demo model, "Platform default" already is it.
      demo: fallback.isDemo
        ? null
        : { spec: "demo", label: "Demo model (offline, canned answers, no provider)" },
      groups,
    } satisfies Api.ModelChoices);
  });

  app.get("/v1/accounts", async (context) => {
    requireAdmin(context);
    const accounts = await store.listAccounts();
    return context.json({
      accounts: accounts.map((account) => ({
        id: account.id,
        name: account.name,
        isAdmin: account.isAdmin,
        createdAt: new Date(account.createdAt).toISOString(),
      })),
    } satisfies Api.AccountList);
  });
}
