/**
 * Model providers an admin configured from the web app (docs/models.md, decision 0035): the
 * platform's OpenAI, Anthropic and xAI keys and its OpenAI-compatible servers. The key is sealed
 * (src/secrets/crypto.ts); the store never sees it in the clear.
 *
 * Invariants (both implementations):
 *   MPST1 one row per provider id: a put of an id that exists replaces it.
 *   MPST2 every put and delete is audited in its transaction (id, kind and base URL, never the key).
 */
export type ModelProviderKind = "openai" | "anthropic" | "xai" | "openai-compatible";

export interface ModelProviderRecord {
  /** `openai`, `anthropic`, `xai`, or an OpenAI-compatible server's own name (its specs' prefix). */
  id: string;
  kind: ModelProviderKind;
  /** A display name, e.g. "Ollama on the GPU box". */
  label: string;
  /** null: the provider's public endpoint. */
  baseUrl: string | null;
  /** The API key, sealed; null for a server that takes none. */
  sealedKey: string | null;
  /** The key's last four characters, to tell keys apart; null without a key. */
  keyHint: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface ModelProviderStore {
  /** Every stored provider, by id. */
  listModelProviders(): Promise<ModelProviderRecord[]>;
  /** MPST1, MPST2. */
  putModelProvider(
    input: Omit<ModelProviderRecord, "createdAt" | "updatedAt"> & { actorAccountId: string },
  ): Promise<{ outcome: "created" | "replaced"; record: ModelProviderRecord }>;
  /** MPST2: false when there was none. */
  deleteModelProvider(input: { id: string; actorAccountId: string }): Promise<boolean>;
}
