/**
 * Web search providers behind one function: SearXNG (`GET /search?format=json`), Brave
 * (`GET /res/v1/web/search`, `X-Subscription-Token`) and Tavily (`POST /search`, a bearer key),
 * chosen by configuration (ROOST_WEB_SEARCH_PROVIDER, docs/web-tools.md). Each answer is parsed
 * from the provider's own JSON format into title, URL and snippet.
 *
 * The provider's endpoint is the operator's choice, so it is called directly, not through a
 * computer's egress policy; the pages it lists are fetched (web_fetch) under that policy.
 */
import { z } from "zod";

export type SearchProviderKind = "searxng" | "brave" | "tavily";

export interface WebSearchConfig {
  provider: SearchProviderKind;
  /** SearXNG's base URL (required); for Brave and Tavily an override of their API's base URL. */
  baseUrl: string;
  /** Brave's subscription token or Tavily's API key. */
  apiKey?: string | undefined;
  /** @default 15_000 */
  timeoutMs?: number;
  /** Bytes of a provider's answer read at most. @default 2_000_000 */
  maxAnswerBytes?: number;
}

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export class WebSearchError extends Error {}

const searxngAnswer = z.object({
  results: z
    .array(
      z.looseObject({
        url: z.string(),
        title: z.string().default(""),
        content: z.string().nullish(),
      }),
    )
    .default([]),
});
const braveAnswer = z.object({
  web: z
    .object({
      results: z
        .array(
          z.looseObject({
            url: z.string(),
            title: z.string().default(""),
            description: z.string().nullish(),
          }),
        )
        .default([]),
    })
    .optional(),
});
const tavilyAnswer = z.object({
  results: z
    .array(
      z.looseObject({
        url: z.string(),
        title: z.string().default(""),
        content: z.string().nullish(),
      }),
    )
    .default([]),
});

const maxSnippetChars = 500;

/** Brave marks matches with <strong>; snippets are plain text for the model. */
function plain(text: string | null | undefined): string {
  const stripped = (text ?? "")
    .replace(/<[^>]*>/g, "")
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&#x27;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&")
    .replace(/\s+/g, " ")
    .trim();
  return stripped.length > maxSnippetChars ? `${stripped.slice(0, maxSnippetChars)}…` : stripped;
}

export interface WebSearcher {
  readonly provider: SearchProviderKind;
  search(query: string, count: number, signal?: AbortSignal): Promise<SearchResult[]>;
}

export function createWebSearcher(config: WebSearchConfig): WebSearcher {
  const timeoutMs = config.timeoutMs ?? 15_000;
  const maxAnswerBytes = config.maxAnswerBytes ?? 2_000_000;

  /** The answer's text, refusing one past `maxAnswerBytes` (the connection is closed there). */
  async function readCapped(response: Response): Promise<string> {
    const reader: ReadableStreamDefaultReader<Uint8Array> | undefined = response.body?.getReader();
    if (reader === undefined) return "";
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > maxAnswerBytes) {
        await reader.cancel();
        throw new WebSearchError(`${name} answered more than ${maxAnswerBytes} bytes; refused.`);
      }
      chunks.push(value);
    }
    return Buffer.concat(chunks).toString("utf8");
  }
  const base = config.baseUrl.replace(/\/+$/, "");
  const name = { searxng: "SearXNG", brave: "Brave Search", tavily: "Tavily" }[config.provider];

  async function call(url: string, init: RequestInit, signal?: AbortSignal): Promise<unknown> {
    const deadline = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetch(url, {
        ...init,
        redirect: "error",
        signal: signal === undefined ? deadline : AbortSignal.any([signal, deadline]),
      });
    } catch (error) {
      if (deadline.aborted)
        throw new WebSearchError(`${name} did not answer within ${timeoutMs / 1000} s.`);
      throw new WebSearchError(`Could not reach ${name}: ${(error as Error).message}.`);
    }
    let text: string;
    try {
      text = await readCapped(response);
    } catch (error) {
      if (error instanceof WebSearchError) throw error;
      throw new WebSearchError(
        deadline.aborted
          ? `${name} did not answer within ${timeoutMs / 1000} s.`
          : `${name}'s answer broke off: ${(error as Error).message}.`,
      );
    }
    if (!response.ok) {
      const hint =
        response.status === 401 || response.status === 403
          ? " (the operator's search API key was refused; check ROOST_WEB_SEARCH_API_KEY)"
          : response.status === 429
            ? " (rate limited; try again later)"
            : "";
      throw new WebSearchError(`${name} answered ${response.status}${hint}.`);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new WebSearchError(
        `${name} did not answer with JSON${config.provider === "searxng" ? " (enable the json format in its settings.yml: search.formats)" : ""}.`,
      );
    }
  }

  function parse<T>(schema: z.ZodType<T>, value: unknown): T {
    const parsed = schema.safeParse(value);
    if (!parsed.success)
      throw new WebSearchError(`${name} answered in an unexpected format: ${parsed.error.message}`);
    return parsed.data;
  }

  return {
    provider: config.provider,
    async search(query, count, signal) {
      let results: SearchResult[];
      switch (config.provider) {
        case "searxng": {
          const url = `${base}/search?${new URLSearchParams({ q: query, format: "json" }).toString()}`;
          const answer = parse(
            searxngAnswer,
            await call(url, { headers: { accept: "application/json" } }, signal),
          );
          results = answer.results.map((item) => ({
            title: plain(item.title),
            url: item.url,
            snippet: plain(item.content),
          }));
          break;
        }
        case "brave": {
          const url = `${base}/res/v1/web/search?${new URLSearchParams({ q: query, count: String(count) }).toString()}`;
          const answer = parse(
            braveAnswer,
            await call(
              url,
              {
                headers: {
                  accept: "application/json",
                  "x-subscription-token": config.apiKey ?? "",
                },
              },
              signal,
            ),
          );
          results = (answer.web?.results ?? []).map((item) => ({
            title: plain(item.title),
            url: item.url,
            snippet: plain(item.description),
          }));
          break;
        }
        case "tavily": {
          const answer = parse(
            tavilyAnswer,
            await call(
              `${base}/search`,
              {
                method: "POST",
                headers: {
                  "content-type": "application/json",
                  authorization: `Bearer ${config.apiKey ?? ""}`,
                },
                body: JSON.stringify({ query, max_results: count }),
              },
              signal,
            ),
          );
          results = answer.results.map((item) => ({
            title: plain(item.title),
            url: item.url,
            snippet: plain(item.content),
          }));
          break;
        }
      }
      return results.filter((item) => /^https?:\/\//i.test(item.url)).slice(0, count);
    },
  };
}
