/**
 * Model providers from the web app (docs/models.md "From the web app", decision 0035): the keys
 * and OpenAI-compatible servers an admin stores in Settings → Models, merged with the server's
 * environment into the configuration the model resolver reads, plus the model picker's lists.
 *
 * Invariants:
 *   MPS1 the environment wins: a kind the environment configures (ROOST_OPENAI_API_KEY, …) uses
 *        the environment's credentials, whatever is stored; storing one for it is refused (409)
 *        with the variable to unset, and `openai-compatible` is the environment's server's name.
 *   MPS2 a key is sealed before it reaches the store, with the provider's id as associated data,
 *        and no view, error or audit row holds it: views carry `set` and its last four characters.
 *   MPS3 `config()` answers the same object until a provider changes (here, or on another node:
 *        `load()` rereads the store), so the resolver keeps its clients until then (registry G3).
 *   MPS4 a base URL is an http(s) URL without credentials, query or fragment; anything else is a
 *        400 saying what to write.
 *   MPS5 calls to a provider's models endpoint time out (`timeoutMs`), follow no redirect (the
 *        key goes only to the URL the admin gave), read at most `maxListBytes`, and report
 *        failures in words; a success is cached `cacheMs`, a failure `failureCacheMs`, per
 *        provider and configuration, and concurrent pickers share one call.
 */
import { InvalidRequestError, NotFoundError, RoostError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";
import type { ModelProviderKind, ModelProviderRecord, ModelProviderStore } from "../store/index.ts";
import { modelProviders, providerEnvironmentVariables, type ModelProvider } from "./providers.ts";
import type { OpenAiCompatibleProviderConfig, ProvidersConfig } from "./registry.ts";

type HostedKind = Exclude<ModelProvider, "openai-compatible">;
const hostedKinds: readonly HostedKind[] = ["openai", "anthropic", "xai"];
const isHostedKind = (value: string): value is HostedKind =>
  (hostedKinds as readonly string[]).includes(value);

/** Names of providers as people say them. */
export const providerLabels: Record<ModelProvider, string> = {
  openai: "OpenAI",
  anthropic: "Anthropic",
  xai: "xAI",
  "openai-compatible": "OpenAI-compatible server",
};

/** The providers' public endpoints, for their models lists. */
const publicBaseUrls: Record<HostedKind, string> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com/v1",
  xai: "https://api.x.ai/v1",
};

/** Offered when a hosted provider's models endpoint cannot be read. */
export const curatedModels: Record<HostedKind, string[]> = {
  openai: ["gpt-4.1", "gpt-4.1-mini", "gpt-4o", "o4-mini"],
  anthropic: ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"],
  xai: ["grok-4", "grok-3-mini"],
};

/** Ids that can never name an OpenAI-compatible server (registry G4). */
const reservedIds = new Set<string>([...modelProviders, "demo"]);
const serverIdPattern = /^[a-z][a-z0-9-]{0,31}$/;
const maxKeyChars = 512;
const maxLabelChars = 80;
const maxBaseUrlChars = 2000;

export interface ProviderSettingsOptions {
  store: ModelProviderStore;
  /** Seals and opens keys (src/secrets/crypto.ts). */
  cipher: {
    seal(plaintext: string, row: string): string;
    open(sealed: string, row: string): string;
  };
  /** The environment's configuration (config/): it wins (MPS1). */
  environment: ProvidersConfig;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** MPS5. @default 10000 */
  timeoutMs?: number;
  /** MPS5. @default 60000 */
  cacheMs?: number;
  /** MPS5. @default 10000 */
  failureCacheMs?: number;
  /** @default Date.now */
  clock?: () => number;
}

export interface ProviderSettings {
  /** MPS3: the effective configuration, environment first. */
  config(): ProvidersConfig;
  /** Rereads the stored providers (at start, and now and then for other nodes' changes). */
  load(): Promise<void>;
  list(): Api.ModelProviderView[];
  put(
    id: string,
    input: Api.PutModelProviderRequest,
    actorAccountId: string,
  ): Promise<Api.ModelProviderView>;
  remove(id: string, actorAccountId: string): Promise<void>;
  test(id: string): Promise<Api.ProviderTestResult>;
  /** The picker's groups: each configured provider's models (MPS5). */
  modelGroups(): Promise<Api.ModelChoiceGroup[]>;
}

interface Stored {
  record: ModelProviderRecord;
  apiKey: string | undefined;
}

/** Where a configured provider is reached, environment or stored. */
interface Endpoint {
  id: string;
  kind: ModelProviderKind;
  label: string;
  baseUrl: string;
  apiKey: string | undefined;
}

/** MPS4: a base URL as the API stores it (no trailing slash), or a 400 saying what to write. */
export function parseBaseUrl(input: string): string {
  const trimmed = input.trim();
  const example = "e.g. http://127.0.0.1:11434/v1 for Ollama";
  let url: URL;
  try {
    if (trimmed.length > maxBaseUrlChars) throw new Error("too long");
    url = new URL(trimmed);
  } catch {
    throw new InvalidRequestError(
      `baseUrl ${JSON.stringify(trimmed.slice(0, 100))} is not a URL: write the server's API root, ${example}`,
      { issues: [{ path: "baseUrl", message: "not a URL" }] },
    );
  }
  const problem =
    url.protocol !== "http:" && url.protocol !== "https:"
      ? `must start with http:// or https:// (it starts with ${url.protocol}//)`
      : url.username !== "" || url.password !== ""
        ? "must not hold a user name or password: put the key in apiKey instead"
        : url.search !== "" || url.hash !== ""
          ? "must not have a query (?…) or fragment (#…)"
          : undefined;
  if (problem !== undefined)
    throw new InvalidRequestError(`baseUrl ${problem}; ${example}`, {
      issues: [{ path: "baseUrl", message: problem }],
    });
  return url.toString().replace(/\/+$/, "");
}

function parseKey(input: string): string {
  const key = input.trim();
  const problem =
    key === ""
      ? "is empty: paste the provider's API key, or leave apiKey out to keep the stored one"
      : key.length > maxKeyChars
        ? `is longer than ${maxKeyChars} characters; paste only the key`
        : /[\s\p{Cc}]/u.test(key)
          ? "holds spaces or control characters; paste only the key"
          : undefined;
  if (problem !== undefined)
    throw new InvalidRequestError(`apiKey ${problem}`, {
      issues: [{ path: "apiKey", message: problem }],
    });
  return key;
}

const lastFour = (key: string): string => key.slice(-4);
const isoOrNull = (ms: number | undefined): string | null =>
  ms === undefined ? null : new Date(ms).toISOString();

export function createProviderSettings(options: ProviderSettingsOptions): ProviderSettings {
  const { store, cipher, environment } = options;
  const fetcher = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const cacheMs = options.cacheMs ?? 60_000;
  const failureCacheMs = options.failureCacheMs ?? 10_000;
  const clock = options.clock ?? Date.now;
  let stored = new Map<string, Stored>();
  let effective: ProvidersConfig = environment;
  const listCache = new Map<string, { at: number; ms: number; group: Api.ModelChoiceGroup }>();

  const environmentHas = (kind: ModelProvider): boolean =>
    kind === "openai-compatible"
      ? environment.openaiCompatible !== undefined
      : environment[kind] !== undefined;

  const sealRow = (id: string) => `model-provider:${id}`; // MPS2: the row is the associated data

  function rebuild(): void {
    const next: ProvidersConfig = { ...environment };
    const servers: Record<string, OpenAiCompatibleProviderConfig> = {};
    for (const { record, apiKey } of stored.values()) {
      if (record.kind === "openai-compatible") {
        servers[record.id] = { baseUrl: record.baseUrl ?? "", apiKey };
      } else if (
        isHostedKind(record.kind) &&
        !environmentHas(record.kind) &&
        apiKey !== undefined
      ) {
        next[record.kind] = { apiKey, baseUrl: record.baseUrl ?? undefined }; // MPS1
      }
    }
    next.servers = servers;
    effective = next; // MPS3: a new object only here
    listCache.clear();
  }

  async function load(): Promise<void> {
    const records = await store.listModelProviders();
    const next = new Map<string, Stored>();
    for (const record of records) {
      let apiKey: string | undefined;
      if (record.sealedKey !== null) {
        try {
          apiKey = cipher.open(record.sealedKey, sealRow(record.id));
        } catch {
          // Sealed under another secrets key (lost or replaced): the provider shows no key, and
          // the admin enters it again; the server still starts.
          apiKey = undefined;
        }
      }
      next.set(record.id, { record, apiKey });
    }
    const same =
      next.size === stored.size &&
      [...next].every(([id, entry]) => stored.get(id)?.record.updatedAt === entry.record.updatedAt);
    stored = next;
    if (!same) rebuild(); // MPS3
  }

  function environmentViews(): Api.ModelProviderView[] {
    const views: Api.ModelProviderView[] = [];
    for (const kind of modelProviders) {
      const config =
        kind === "openai-compatible" ? environment.openaiCompatible : environment[kind];
      if (config === undefined) continue;
      const variables = providerEnvironmentVariables[kind];
      views.push({
        id: kind,
        kind,
        label: providerLabels[kind],
        source: "environment",
        baseUrl: config.baseUrl ?? null,
        key: { set: config.apiKey !== undefined && config.apiKey !== "", lastFour: null },
        environment: [variables.apiKey, variables.baseUrl],
        shadowed: false,
        specPrefix: kind,
        updatedAt: null,
      });
    }
    return views;
  }

  function storedView({ record, apiKey }: Stored): Api.ModelProviderView {
    const shadowed = isHostedKind(record.kind) && environmentHas(record.kind);
    return {
      id: record.id,
      kind: record.kind,
      label: record.label,
      source: "settings",
      baseUrl: record.baseUrl,
      key: { set: apiKey !== undefined, lastFour: apiKey === undefined ? null : record.keyHint }, // MPS2
      environment: shadowed ? [providerEnvironmentVariables[record.kind].apiKey] : [],
      shadowed,
      specPrefix: record.id,
      updatedAt: isoOrNull(record.updatedAt),
    };
  }

  function list(): Api.ModelProviderView[] {
    return [...environmentViews(), ...[...stored.values()].map(storedView)];
  }

  /** The provider reached for `id`: the environment's for its kinds (MPS1), else the stored one. */
  function endpointOf(id: string): Endpoint | undefined {
    if (id === "openai-compatible" && environment.openaiCompatible !== undefined)
      return {
        id,
        kind: "openai-compatible",
        label: providerLabels["openai-compatible"],
        baseUrl: environment.openaiCompatible.baseUrl,
        apiKey: environment.openaiCompatible.apiKey,
      };
    if (isHostedKind(id)) {
      const config = effective[id];
      if (config === undefined) return undefined;
      return {
        id,
        kind: id,
        label: environmentHas(id) ? providerLabels[id] : (stored.get(id)?.record.label ?? id),
        baseUrl: config.baseUrl ?? publicBaseUrls[id],
        apiKey: config.apiKey,
      };
    }
    const entry = stored.get(id);
    if (entry === undefined || entry.record.kind !== "openai-compatible") return undefined;
    return {
      id,
      kind: "openai-compatible",
      label: entry.record.label,
      baseUrl: entry.record.baseUrl ?? "",
      apiKey: entry.apiKey,
    };
  }

  function checkId(id: string, kind: ModelProviderKind): void {
    if (isHostedKind(kind)) {
      if (id !== kind)
        throw new InvalidRequestError(
          `a ${providerLabels[kind]} key is stored as provider "${kind}": PUT /v1/admin/providers/${kind}`,
          { issues: [{ path: "kind", message: `must match the id (${kind})` }] },
        );
      if (environmentHas(kind))
        throw new RoostError(
          "conflict",
          `${providerLabels[kind]} is configured by this server's environment (${providerEnvironmentVariables[kind].apiKey}), which wins; unset it and restart to manage the key here`,
        ); // MPS1
      return;
    }
    if (reservedIds.has(id) || !serverIdPattern.test(id))
      throw new InvalidRequestError(
        `an OpenAI-compatible server's id ${JSON.stringify(id.slice(0, 40))} must be 1–32 lowercase letters, digits or dashes starting with a letter, and not one of ${[...reservedIds].join(", ")} (e.g. "ollama"); its models are then named ollama:<model>`,
        { issues: [{ path: "id", message: "not a valid server name" }] },
      );
  }

  async function put(
    id: string,
    input: Api.PutModelProviderRequest,
    actorAccountId: string,
  ): Promise<Api.ModelProviderView> {
    checkId(id, input.kind);
    const old = stored.get(id);
    const baseUrl =
      input.baseUrl === undefined
        ? (old?.record.baseUrl ?? null)
        : input.baseUrl === null || input.baseUrl.trim() === ""
          ? null
          : parseBaseUrl(input.baseUrl);
    if (input.kind === "openai-compatible" && baseUrl === null)
      throw new InvalidRequestError(
        "baseUrl is required for an OpenAI-compatible server: its API root, e.g. http://127.0.0.1:11434/v1 for Ollama",
        { issues: [{ path: "baseUrl", message: "required" }] },
      );
    const apiKey =
      input.apiKey === undefined
        ? old?.apiKey
        : input.apiKey === null
          ? undefined
          : parseKey(input.apiKey);
    if (isHostedKind(input.kind) && apiKey === undefined)
      throw new InvalidRequestError(
        `apiKey is required for ${providerLabels[input.kind]}: paste the key from the provider's console`,
        { issues: [{ path: "apiKey", message: "required" }] },
      );
    const label = (
      input.label ??
      old?.record.label ??
      (input.kind === "openai-compatible" ? id : providerLabels[input.kind])
    ).trim();
    if (label === "" || label.length > maxLabelChars)
      throw new InvalidRequestError(`label must be 1–${maxLabelChars} characters`, {
        issues: [{ path: "label", message: "wrong length" }],
      });
    const { record } = await store.putModelProvider({
      id,
      kind: input.kind,
      label,
      baseUrl,
      sealedKey: apiKey === undefined ? null : cipher.seal(apiKey, sealRow(id)), // MPS2
      keyHint: apiKey === undefined ? null : lastFour(apiKey),
      actorAccountId,
    });
    stored = new Map(stored).set(id, { record, apiKey });
    rebuild();
    return storedView({ record, apiKey });
  }

  async function remove(id: string, actorAccountId: string): Promise<void> {
    const deleted = await store.deleteModelProvider({ id, actorAccountId });
    if (!deleted) {
      if (environmentViews().some((view) => view.id === id))
        throw new RoostError(
          "conflict",
          `${id} is configured by this server's environment; unset its variables and restart to remove it`,
        );
      throw new NotFoundError("model provider", id);
    }
    const next = new Map(stored);
    next.delete(id);
    stored = next;
    rebuild();
  }

  /** MPS5: the models endpoint, read with a deadline and a size cap. */
  async function listModels(endpoint: Endpoint): Promise<Array<{ id: string; name?: string }>> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (endpoint.kind === "anthropic") {
      if (endpoint.apiKey !== undefined) headers["x-api-key"] = endpoint.apiKey;
      headers["anthropic-version"] = "2023-06-01";
    } else if (endpoint.apiKey !== undefined && endpoint.apiKey !== "") {
      headers.authorization = `Bearer ${endpoint.apiKey}`;
    }
    const url = `${endpoint.baseUrl.replace(/\/+$/, "")}/models`;
    let response: Response;
    try {
      response = await fetcher(url, {
        headers,
        redirect: "error",
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const timedOut = error instanceof Error && error.name === "TimeoutError";
      throw new Error(
        timedOut
          ? `${endpoint.label} did not answer within ${Math.round(timeoutMs / 1000)} s at ${url}`
          : `could not reach ${endpoint.label} at ${url}: check the base URL and that the server is running`,
        { cause: error },
      );
    }
    if (response.status === 401 || response.status === 403) {
      await response.body?.cancel();
      throw new Error(`${endpoint.label} refused the key (HTTP ${response.status}): check it`);
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`${endpoint.label} answered HTTP ${response.status} at ${url}`);
    }
    const text = await readCapped(response, maxListBytes);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error(`${endpoint.label} did not answer a models list at ${url} (not JSON)`);
    }
    const data = (body as { data?: unknown }).data;
    if (!Array.isArray(data))
      throw new Error(`${endpoint.label} did not answer a models list at ${url} (no "data")`);
    return data
      .filter(
        (item): item is { id: string; display_name?: unknown } =>
          typeof item === "object" &&
          item !== null &&
          typeof (item as { id?: unknown }).id === "string",
      )
      .map((item) => ({
        id: item.id,
        ...(typeof item.display_name === "string" ? { name: item.display_name } : {}),
      }));
  }

  async function test(id: string): Promise<Api.ProviderTestResult> {
    const endpoint = endpointOf(id);
    if (endpoint === undefined) throw new NotFoundError("model provider", id);
    try {
      const models = await listModels(endpoint);
      listCache.delete(id);
      return {
        ok: true,
        models: models.length,
        message: `Connected to ${endpoint.label}: ${models.length} model${models.length === 1 ? "" : "s"} listed.`,
      };
    } catch (error) {
      return { ok: false, models: 0, message: (error as Error).message };
    }
  }

  const listing = new Map<string, Promise<Api.ModelChoiceGroup>>();
  /** MPS5: cached, and one call per provider at a time however many pickers open at once. */
  function groupOf(endpoint: Endpoint): Promise<Api.ModelChoiceGroup> {
    const cached = listCache.get(endpoint.id);
    if (cached !== undefined && clock() - cached.at < cached.ms)
      return Promise.resolve(cached.group);
    let running = listing.get(endpoint.id);
    if (running === undefined) {
      running = fetchGroup(endpoint).finally(() => listing.delete(endpoint.id));
      listing.set(endpoint.id, running);
    }
    return running;
  }

  async function fetchGroup(endpoint: Endpoint): Promise<Api.ModelChoiceGroup> {
    let group: Api.ModelChoiceGroup;
    let ms = cacheMs;
    try {
      const listed = (await listModels(endpoint)).filter((model) =>
        endpoint.kind === "openai" ? isOpenAiChatModel(model.id) : true,
      );
      listed.sort((a, b) => a.id.localeCompare(b.id));
      group = {
        providerId: endpoint.id,
        label: endpoint.label,
        listedBy: "provider",
        models: listed.map((model) => ({
          spec: `${endpoint.id}:${model.id}`,
          label: model.name ?? model.id,
        })),
      };
    } catch (error) {
      ms = failureCacheMs;
      const curated = isHostedKind(endpoint.kind) ? curatedModels[endpoint.kind] : [];
      group = {
        providerId: endpoint.id,
        label: endpoint.label,
        listedBy: "curated",
        models: curated.map((model) => ({ spec: `${endpoint.id}:${model}`, label: model })),
        problem: (error as Error).message,
      };
    }
    listCache.set(endpoint.id, { at: clock(), ms, group });
    return group;
  }

  async function modelGroups(): Promise<Api.ModelChoiceGroup[]> {
    const ids = new Set<string>();
    for (const kind of hostedKinds) if (effective[kind] !== undefined) ids.add(kind);
    if (environment.openaiCompatible !== undefined) ids.add("openai-compatible");
    for (const id of Object.keys(effective.servers ?? {})) ids.add(id);
    const endpoints = [...ids].flatMap((id) => endpointOf(id) ?? []);
    return Promise.all(endpoints.map(groupOf));
  }

  return { config: () => effective, load, list, put, remove, test, modelGroups };
}

/** MPS5: a models list is small; a bigger answer is not one. */
const maxListBytes = 4 * 1024 * 1024;

async function readCapped(response: Response, limit: number): Promise<string> {
  const reader = (response.body as ReadableStream<Uint8Array> | null)?.getReader();
  if (reader === undefined) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new Error(`the models list is larger than ${limit / 1024 / 1024} MiB`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** OpenAI lists embeddings, audio and image models too; the picker offers chat models. */
function isOpenAiChatModel(id: string): boolean {
  return (
    /^(gpt-|o\d|chatgpt-)/.test(id) &&
    !/(embedding|tts|whisper|dall-e|image|audio|realtime|transcribe|search|moderation)/.test(id)
  );
}
