import { describe, expect, test } from "vitest";
import { ConfigError } from "../errors/index.ts";
import {
  createModelResolver,
  parseModelSpec,
  ProviderNotConfiguredError,
  type ProvidersConfig,
} from "./registry.ts";

describe("parseModelSpec", () => {
  test("splits provider and model at the first colon", () => {
    expect(parseModelSpec("openai:gpt-4.1-mini")).toEqual({
      provider: "openai",
      model: "gpt-4.1-mini",
    });
    expect(parseModelSpec(" openai-compatible:llama3.2:3b ")).toEqual({
      provider: "openai-compatible",
      model: "llama3.2:3b",
    });
    expect(parseModelSpec("Anthropic:claude-sonnet-4-5")).toEqual({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
    });
    expect(parseModelSpec("demo")).toEqual({ provider: "demo", model: "demo" });
  });

  test("an unknown provider lists the valid ones", () => {
    expect(() => parseModelSpec("gemini:pro")).toThrow(ConfigError);
    expect(() => parseModelSpec("gemini:pro")).toThrow(
      'unknown model provider "gemini" in model spec "gemini:pro" (valid: openai, anthropic, xai, openai-compatible, an OpenAI-compatible server\'s name, or "demo")',
    );
  });

  test("a spec without provider or without model says what to write", () => {
    expect(() => parseModelSpec("gpt-4.1-mini")).toThrow(
      "has no provider: write provider:model, e.g. openai:gpt-4.1-mini",
    );
    expect(() => parseModelSpec("openai:")).toThrow("names no model: write openai:<model name>");
  });
});

describe("createModelResolver", () => {
  test("with nothing configured, the default is the demo model", () => {
    const resolver = createModelResolver({});
    expect(resolver.defaultSpec).toBe("demo");
    const model = resolver.resolve(undefined);
    expect(model.id).toBe("demo");
    expect(model.isDemo).toBe(true);
    expect(resolver.resolve(null)).toBe(model);
    expect(resolver.resolve("")).toBe(model);
    expect(resolver.resolve("demo")).toBe(model);
  });

  test("the configured default model is used when no spec is given", () => {
    const resolver = createModelResolver({
      defaultModel: "anthropic:claude-sonnet-4-5",
      anthropic: { apiKey: "sk-ant" },
    });
    expect(resolver.resolve(undefined).id).toBe("anthropic:claude-sonnet-4-5");
  });

  test("a configured provider without a default model picks its fallback model", () => {
    expect(createModelResolver({ openai: { apiKey: "sk" } }).resolve(undefined).id).toBe(
      "openai:gpt-4.1-mini",
    );
    expect(createModelResolver({ xai: { apiKey: "xai" } }).defaultSpec).toBe("xai:grok-4");
  });

  test("only an OpenAI-compatible server and no default model asks for ROOST_MODEL", () => {
    const resolver = createModelResolver({
      openaiCompatible: { baseUrl: "http://127.0.0.1:11434/v1" },
    });
    expect(() => resolver.resolve(undefined)).toThrow(
      "set ROOST_MODEL=openai-compatible:<model name>",
    );
    expect(resolver.resolve("openai-compatible:llama3.2").id).toBe("openai-compatible:llama3.2");
  });

  test("demo stays available when providers are configured", () => {
    const resolver = createModelResolver({ openai: { apiKey: "sk" } });
    expect(resolver.resolve("demo").isDemo).toBe(true);
  });

  test("a provider without credentials names the variable to set", () => {
    const resolver = createModelResolver({});
    expect(() => resolver.resolve("openai:gpt-4.1-mini")).toThrow("set ROOST_OPENAI_API_KEY");
    expect(() => resolver.resolve("anthropic:claude-sonnet-4-5")).toThrow(
      "set ROOST_ANTHROPIC_API_KEY",
    );
    expect(() => resolver.resolve("xai:grok-4")).toThrow("set ROOST_XAI_API_KEY");
    expect(() => resolver.resolve("openai-compatible:llama3.2")).toThrow(
      "set ROOST_OPENAI_COMPATIBLE_BASE_URL",
    );
    expect(() => resolver.resolve("openai:gpt-4.1-mini")).toThrow(ProviderNotConfiguredError);
    try {
      resolver.resolve("xai:grok-4");
    } catch (error) {
      // The API's 400 passes `provider` on, so the web app can point at Settings → Models.
      expect(error).toMatchObject({ code: "config_invalid", details: { provider: "xai" } });
    }
  });

  test("G4: a named OpenAI-compatible server's models are `name:model`; built-in names stay built-in", () => {
    const resolver = createModelResolver({
      servers: { ollama: { baseUrl: "http://127.0.0.1:11434/v1" } },
    });
    expect(resolver.resolve("ollama:llama3.2:3b").id).toBe("ollama:llama3.2:3b");
    expect(() => resolver.resolve("other:llama3.2")).toThrow('unknown model provider "other"');
    expect(() => resolver.resolve("ollama:")).toThrow("names no model");
    expect(parseModelSpec("ollama:llama3.2", new Set(["ollama"]))).toEqual({
      provider: "openai-compatible",
      model: "llama3.2",
      server: "ollama",
    });
  });

  test("G3: a new configuration object starts afresh (an admin added a key: new turns use it)", () => {
    let config: ProvidersConfig = {};
    const resolver = createModelResolver(() => config);
    expect(resolver.defaultSpec).toBe("demo");
    expect(() => resolver.resolve("openai:gpt-4.1-mini")).toThrow("ROOST_OPENAI_API_KEY");
    config = { openai: { apiKey: "sk-new" } };
    expect(resolver.defaultSpec).toBe("openai:gpt-4.1-mini");
    const client = resolver.resolve("openai:gpt-4.1-mini");
    expect(resolver.resolve("openai:gpt-4.1-mini")).toBe(client);
    config = { ...config };
    expect(resolver.resolve("openai:gpt-4.1-mini")).not.toBe(client);
  });

  test("an invalid default model fails with the parse error", () => {
    expect(() => createModelResolver({ defaultModel: "nope" }).resolve(undefined)).toThrow(
      "has no provider",
    );
  });

  test("caches one client per spec", () => {
    const resolver = createModelResolver({ openai: { apiKey: "sk" } });
    const first = resolver.resolve("openai:gpt-4.1-mini");
    expect(resolver.resolve(" openai:gpt-4.1-mini")).toBe(first);
    expect(resolver.resolve(undefined)).toBe(first);
    expect(resolver.resolve("openai:gpt-4.1")).not.toBe(first);
  });

  test("a provider's acceptsImages setting reaches its clients; the demo reads no images", () => {
    const resolver = createModelResolver({
      openaiCompatible: { baseUrl: "http://127.0.0.1:1/v1", acceptsImages: true },
      anthropic: { apiKey: "k" },
    });
    expect(resolver.resolve("openai-compatible:my-finetune").acceptsImages).toBe(true);
    expect(resolver.resolve("anthropic:claude-sonnet-4-5").acceptsImages).toBe(true);
    expect(resolver.resolve("demo").acceptsImages).toBe(false);
  });
});
