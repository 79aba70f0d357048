/**
 * Helpers (docs/api.md "Helpers", docs/helpers.md): `GET /v1/conversations/{id}/helpers`.
 *
 * Invariants:
 *   HAPI1 only the caller's own conversation's helpers are listed: another account's
 *         conversation answers 404 exactly like a missing one.
 */
import type { Hono } from "hono";
import { NotFoundError } from "../errors/index.ts";
import type { HelpersService } from "../helpers/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Account, HelperRecord, Store } from "../store/index.ts";

type HelperApp = Hono<{ Variables: { account: Account } }>;

/** The API's view of a helper (the store's record without its account). */
export function helperView(helper: HelperRecord): Api.Helper {
  const { accountId: _accountId, ...view } = helper;
  return view;
}

export function registerHelperRoutes(
  app: HelperApp,
  deps: { store: Store; helpers: HelpersService },
): void {
  app.get("/v1/conversations/:id/helpers", async (context) => {
    const accountId = context.get("account").id;
    const id = context.req.param("id");
    const conversation = await deps.store.getConversation(id);
    if (conversation === undefined || conversation.accountId !== accountId)
      throw new NotFoundError("conversation", id); // HAPI1
    const helpers = await deps.helpers.list(accountId, conversation.id);
    return context.json({ helpers: helpers.map(helperView) } satisfies Api.HelperList);
  });
}
