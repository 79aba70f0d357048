/**
 * The model providers Roost can talk to, and the environment variables that configure each one.
 * Only config/ reads the environment; the names live here so error messages can tell people which
 * variable to set.
 */

/** Every provider a model spec may name (`provider:model`). */
export const modelProviders = ["openai", "anthropic", "xai", "openai-compatible"] as const;

/** A provider reached through the AI SDK. */
export type ModelProvider = (typeof modelProviders)[number];

/** Whether a string names a provider Roost supports. */
export function isModelProvider(value: string): value is ModelProvider {
  return (modelProviders as readonly string[]).includes(value);
}

/** The environment variables that configure each provider. */
export const providerEnvironmentVariables: Record<
  ModelProvider,
  { apiKey: string; baseUrl: string }
> = {
  openai: { apiKey: "ROOST_OPENAI_API_KEY", baseUrl: "ROOST_OPENAI_BASE_URL" },
  anthropic: { apiKey: "ROOST_ANTHROPIC_API_KEY", baseUrl: "ROOST_ANTHROPIC_BASE_URL" },
  xai: { apiKey: "ROOST_XAI_API_KEY", baseUrl: "ROOST_XAI_BASE_URL" },
  "openai-compatible": {
    apiKey: "ROOST_OPENAI_COMPATIBLE_API_KEY",
    baseUrl: "ROOST_OPENAI_COMPATIBLE_BASE_URL",
  },
};

/** The environment variable that picks the default model. */
export const defaultModelEnvironmentVariable = "ROOST_MODEL";
