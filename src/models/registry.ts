/**
 * From a model spec (`openai:gpt-4.1-mini`, `demo`, or nothing) to a `ModelClient`.
 *
 * Invariants:
 * G1 No spec means the default model; with no default model and no provider configured that is
 *    the demo model, so a fresh install answers without any setup.
 * G2 A spec naming a provider without credentials fails with the environment variable to set;
 *    it never silently falls back to another model.
 * G3 One client per spec: resolving the same spec twice returns the same client, for as long as the
 *    provider configuration is the same object; a new configuration (an admin changed a provider
 *    in Settings → Models) starts afresh, so new turns use it without a restart.
 * G4 A spec's provider part is a built-in provider or the id of an OpenAI-compatible server an
 *    admin named (`ollama:llama3.2`); built-in names and `demo` can never be such ids.
 */
import { ConfigError, RoostError } from "../errors/index.ts";
import { createAiSdkModel } from "./ai-sdk.ts";
import { createDemoModel } from "./demo.ts";
import {
  defaultModelEnvironmentVariable,
  isModelProvider,
  modelProviders,
  providerEnvironmentVariables,
} from "./providers.ts";
import type { ModelProvider } from "./providers.ts";
import type { RetryOptions, Sleep } from "./retry.ts";
import type { ModelClient } from "./types.ts";

/** A parsed model spec. */
export type ModelSpec =
  | { provider: "demo"; model: "demo" }
  | { provider: ModelProvider; model: string; server?: undefined }
  | { provider: "openai-compatible"; model: string; server: string };

/** G2: a model's provider has no credentials. `details.provider` lets clients say it their way. */
export class ProviderNotConfiguredError extends RoostError {
  override readonly name = "ProviderNotConfiguredError";
  readonly provider: string;
  constructor(provider: string, message: string) {
    super("config_invalid", message, { details: { provider } });
    this.provider = provider;
  }
}

const validSpecs = `${modelProviders.join(", ")}, an OpenAI-compatible server's name, or "demo"`;

/**
 * Parses `provider:model` (the model part may itself contain colons, e.g.
 * `openai-compatible:llama3.2:3b`) or `demo`; `servers` are the named OpenAI-compatible servers
 * (G4). @default no named servers
 */
export function parseModelSpec(spec: string, servers: ReadonlySet<string> = new Set()): ModelSpec {
  const trimmed = spec.trim();
  if (trimmed === "demo") return { provider: "demo", model: "demo" };
  const colon = trimmed.indexOf(":");
  if (colon === -1) {
    throw new ConfigError(
      `model spec ${JSON.stringify(spec)} has no provider: write provider:model, e.g. openai:gpt-4.1-mini (providers: ${validSpecs})`,
    );
  }
  const provider = trimmed.slice(0, colon).trim().toLowerCase();
  const model = trimmed.slice(colon + 1).trim();
  if (!isModelProvider(provider) && servers.has(provider)) {
    if (model === "")
      throw new ConfigError(
        `model spec ${JSON.stringify(spec)} names no model: write ${provider}:<model name>`,
      );
    return { provider: "openai-compatible", model, server: provider }; // G4
  }
  if (!isModelProvider(provider)) {
    throw new ConfigError(
      `unknown model provider ${JSON.stringify(provider)} in model spec ${JSON.stringify(spec)} (valid: ${validSpecs})`,
    );
  }
  if (model === "") {
    throw new ConfigError(
      `model spec ${JSON.stringify(spec)} names no model: write ${provider}:<model name>`,
    );
  }
  return { provider, model };
}

/** Credentials for a hosted provider. */
export interface HostedProviderConfig {
  apiKey: string;
  /** @default the provider's public endpoint */
  baseUrl?: string | undefined;
  /** Whether the models read images in tool results. @default by model name (`modelAcceptsImages`) */
  acceptsImages?: boolean | undefined;
}

/** Where an OpenAI-compatible server (Ollama, vLLM, llama.cpp) listens. */
export interface OpenAiCompatibleProviderConfig {
  /** E.g. `http://127.0.0.1:11434/v1`. */
  baseUrl: string;
  apiKey?: string | undefined;
  /** Whether the server's models read images in tool results. @default by model name (`modelAcceptsImages`) */
  acceptsImages?: boolean | undefined;
}

/** The resolved provider configuration (from config/). */
export interface ProvidersConfig {
  /** Spec used when a bot names no model, e.g. `anthropic:claude-sonnet-4-5`. */
  defaultModel?: string | undefined;
  openai?: HostedProviderConfig | undefined;
  anthropic?: HostedProviderConfig | undefined;
  xai?: HostedProviderConfig | undefined;
  openaiCompatible?: OpenAiCompatibleProviderConfig | undefined;
  /** OpenAI-compatible servers an admin named in Settings → Models, by name (G4). */
  servers?: Record<string, OpenAiCompatibleProviderConfig> | undefined;
}

/** Options that apply to every client a resolver creates. */
export interface ModelResolverOptions {
  retry?: RetryOptions | undefined;
  sleep?: Sleep | undefined;
  idleTimeoutMs?: number | undefined;
}

/** Turns model specs into clients. */
export interface ModelResolver {
  /** The client for `spec`; `null`/`undefined`/empty means the default model (G1). Throws `ConfigError`. */
  resolve(spec: string | null | undefined): ModelClient;
  /** The spec that `resolve(undefined)` uses, e.g. `demo` or `openai:gpt-4.1-mini`. */
  readonly defaultSpec: string;
}

/** Model used when a hosted provider is configured but no default model is set. */
export const fallbackModels: Record<Exclude<ModelProvider, "openai-compatible">, string> = {
  openai: "gpt-4.1-mini",
  anthropic: "claude-sonnet-4-5",
  xai: "grok-4",
};

function credentialsFor(
  config: ProvidersConfig,
  provider: ModelProvider,
):
  | {
      apiKey?: string | undefined;
      baseUrl?: string | undefined;
      acceptsImages?: boolean | undefined;
    }
  | undefined {
  switch (provider) {
    case "openai":
      return config.openai;
    case "anthropic":
      return config.anthropic;
    case "xai":
      return config.xai;
    case "openai-compatible":
      return config.openaiCompatible;
  }
}

/** The default spec (G1): the configured default, else a configured hosted provider's fallback model, else demo. */
function chooseDefaultSpec(config: ProvidersConfig): string {
  const configured = config.defaultModel?.trim();
  if (configured !== undefined && configured !== "") return configured;
  for (const provider of ["openai", "anthropic", "xai"] as const) {
    if (credentialsFor(config, provider) !== undefined)
      return `${provider}:${fallbackModels[provider]}`;
  }
  if (config.openaiCompatible !== undefined) {
    throw new ConfigError(
      `no default model: ${providerEnvironmentVariables["openai-compatible"].baseUrl} is set, so also set ${defaultModelEnvironmentVariable}=openai-compatible:<model name> (e.g. openai-compatible:llama3.2)`,
    );
  }
  return "demo";
}

/**
 * Creates a resolver over the given provider configuration, or over a function answering the
 * current one (G3: a new object clears the resolver's clients).
 */
export function createModelResolver(
  source: ProvidersConfig | (() => ProvidersConfig),
  options: ModelResolverOptions = {},
): ModelResolver {
  const current = typeof source === "function" ? source : () => source;
  const clients = new Map<string, ModelClient>();
  let config = current();
  let defaultSpec: string | undefined;
  const refresh = (): void => {
    const latest = current();
    if (latest === config) return;
    config = latest; // G3
    clients.clear();
    defaultSpec = undefined;
  };
  const getDefaultSpec = (): string => (defaultSpec ??= chooseDefaultSpec(config));

  function create(spec: ModelSpec): ModelClient {
    if (spec.provider === "demo") return createDemoModel();
    const credentials =
      spec.server === undefined
        ? credentialsFor(config, spec.provider)
        : config.servers?.[spec.server];
    const variables = providerEnvironmentVariables[spec.provider];
    if (credentials === undefined) {
      // G2
      const missing = spec.provider === "openai-compatible" ? variables.baseUrl : variables.apiKey;
      throw new ProviderNotConfiguredError(
        spec.provider,
        `model ${spec.provider}:${spec.model} needs ${spec.provider} credentials: set ${missing}`,
      );
    }
    return createAiSdkModel({
      provider: spec.provider,
      model: spec.model,
      apiKey: credentials.apiKey,
      baseUrl: credentials.baseUrl,
      acceptsImages: credentials.acceptsImages,
      retry: options.retry,
      sleep: options.sleep,
      idleTimeoutMs: options.idleTimeoutMs,
      ...(spec.server === undefined ? {} : { id: `${spec.server}:${spec.model}` }),
    });
  }

  return {
    get defaultSpec(): string {
      refresh();
      return getDefaultSpec();
    },
    resolve(spec) {
      refresh();
      const wanted =
        spec === null || spec === undefined || spec.trim() === "" ? getDefaultSpec() : spec;
      const parsed = parseModelSpec(wanted, new Set(Object.keys(config.servers ?? {})));
      const key =
        parsed.provider === "demo" ? "demo" : `${parsed.server ?? parsed.provider}:${parsed.model}`;
      let client = clients.get(key); // G3
      if (client === undefined) {
        client = create(parsed);
        clients.set(key, client);
      }
      return client;
    },
  };
}
