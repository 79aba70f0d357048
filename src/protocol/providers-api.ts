/**
 * Model providers and the model picker (docs/models.md "From the web app", decision 0035): the
 * wire types of `/v1/admin/providers`, `/v1/providers/models` and the admin's accounts list.
 */

export type ModelProviderKind = "openai" | "anthropic" | "xai" | "openai-compatible";

/** One provider as the settings page shows it; its key never leaves the server. */
export interface ModelProviderView {
  /** `openai`, `anthropic`, `xai`, `openai-compatible` (the environment's), or a server's name. */
  id: string;
  kind: ModelProviderKind;
  label: string;
  /** `environment`: configured by the server's environment, read-only here; it wins. */
  source: "environment" | "settings";
  /** null: the provider's public endpoint. */
  baseUrl: string | null;
  /** Whether a key is set, and its last four characters for a stored one. */
  key: { set: boolean; lastFour: string | null };
  /** The environment variables that configure it (for `environment`, and for a stored one it shadows). */
  environment: string[];
  /** A stored provider the environment configures too: the environment's is used. */
  shadowed: boolean;
  /** How model specs name its models: `<prefix>:<model>`. */
  specPrefix: string;
  updatedAt: string | null;
}

/** `GET /v1/admin/providers`. */
export interface ModelProviderList {
  providers: ModelProviderView[];
  /** The spec a bot with no model of its own uses. */
  defaultModel: { spec: string; isDemo: boolean };
}

/**
 * `PUT /v1/admin/providers/{id}`: `openai`, `anthropic` or `xai` as the id for those kinds (their
 * key is required the first time); any other id names an OpenAI-compatible server (its base URL
 * is required, its key optional). Leave `apiKey` out to keep the stored key; `null` removes it.
 */
export interface PutModelProviderRequest {
  kind: ModelProviderKind;
  label?: string;
  baseUrl?: string | null;
  apiKey?: string | null;
}

/** `POST /v1/admin/providers/{id}/test`: the provider's models endpoint, called now. */
export interface ProviderTestResult {
  ok: boolean;
  /** How many models it listed (0 when it failed). */
  models: number;
  /** What happened, in words for the settings page. */
  message: string;
}

export interface ModelChoice {
  /** The bot's `model` value, e.g. `openai:gpt-4.1-mini`, `ollama:llama3.2` or `demo`. */
  spec: string;
  label: string;
}

/** One configured provider's models. */
export interface ModelChoiceGroup {
  providerId: string;
  label: string;
  /** `provider`: from its models endpoint; `curated`: Roost's list (the endpoint failed). */
  listedBy: "provider" | "curated";
  models: ModelChoice[];
  /** Why the provider's own list is missing, in the web app's words. */
  problem?: string;
}

/** `GET /v1/providers/models`: what the bot form's model picker offers. */
export interface ModelChoices {
  /** "Platform default (…)": a bot with `model: null`. */
  platformDefault: { label: string; spec: string; isDemo: boolean };
  /** The demo model, offered apart only when it is not the platform default already. */
  demo: ModelChoice | null;
  groups: ModelChoiceGroup[];
}

/** `GET /v1/accounts` (admin). */
export interface AccountList {
  accounts: Array<{ id: string; name: string; isAdmin: boolean; createdAt: string }>;
}
