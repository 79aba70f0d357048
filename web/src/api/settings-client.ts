/**
 * The settings pages' calls (docs/api.md "Model providers", "Tokens", "Accounts", "Results"),
 * over the app's one API client so errors and sign-out work the same everywhere.
 */
import type { ApiClient } from "./client.ts";
import type {
  AccountList,
  CreatedAccount,
  CreatedToken,
  ModelChoices,
  ModelProviderList,
  ModelProviderView,
  OwnerWebhook,
  OwnerWebhookCreated,
  ProviderTestResult,
  PutModelProviderRequest,
  TokenList,
} from "./types.ts";

const enc = encodeURIComponent;

async function json<T>(
  api: ApiClient,
  method: string,
  path: string,
  init: { json?: unknown; signal?: AbortSignal } = {},
): Promise<T> {
  const response = await api.send(method, path, init);
  return (await response.json()) as T;
}

export function settingsClient(api: ApiClient) {
  return {
    providers: (signal?: AbortSignal) =>
      json<ModelProviderList>(api, "GET", "/v1/admin/providers", { signal }),
    putProvider: (id: string, input: PutModelProviderRequest) =>
      json<ModelProviderView>(api, "PUT", `/v1/admin/providers/${enc(id)}`, { json: input }),
    deleteProvider: async (id: string) => {
      await api.send("DELETE", `/v1/admin/providers/${enc(id)}`);
    },
    testProvider: (id: string) =>
      json<ProviderTestResult>(api, "POST", `/v1/admin/providers/${enc(id)}/test`),
    /** What the bot form's model picker offers. */
    modelChoices: (signal?: AbortSignal) =>
      json<ModelChoices>(api, "GET", "/v1/providers/models", { signal }),
    tokens: async (signal?: AbortSignal) =>
      (await json<TokenList>(api, "GET", "/v1/tokens", { signal })).tokens,
    createToken: (name: string, accountId = "me") =>
      json<CreatedToken>(api, "POST", `/v1/accounts/${enc(accountId)}/tokens`, {
        json: { name },
      }),
    revokeToken: async (id: string) => {
      await api.send("DELETE", `/v1/tokens/${enc(id)}`);
    },
    accounts: async (signal?: AbortSignal) =>
      (await json<AccountList>(api, "GET", "/v1/accounts", { signal })).accounts,
    createAccount: (name: string) =>
      json<CreatedAccount>(api, "POST", "/v1/accounts", { json: { name } }),
    /** The notifications webhook, or undefined when none is set. */
    notificationsWebhook: async (signal?: AbortSignal) => {
      try {
        return await json<OwnerWebhook>(api, "GET", "/v1/notifications/webhook", { signal });
      } catch (error) {
        if ((error as { status?: number }).status === 404) return undefined;
        throw error;
      }
    },
    setNotificationsWebhook: (url: string) =>
      json<OwnerWebhookCreated>(api, "PUT", "/v1/notifications/webhook", { json: { url } }),
    deleteNotificationsWebhook: async () => {
      await api.send("DELETE", "/v1/notifications/webhook");
    },
  };
}

export type SettingsClient = ReturnType<typeof settingsClient>;
