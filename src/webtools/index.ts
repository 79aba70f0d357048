/**
 * webtools/: the server's own way to the web for bots (docs/web-tools.md): `web_search` through
 * a configured provider and `web_fetch` under the account's egress policy, without a computer.
 */
export {
  createWebFetcher,
  parseFetchUrl,
  WebFetchError,
  type FetchedPage,
  type WebFetchHop,
  type WebFetcher,
  type WebFetcherOptions,
} from "./fetch.ts";
export { htmlToMarkdown } from "./markdown.ts";
export {
  createWebSearcher,
  WebSearchError,
  type SearchProviderKind,
  type SearchResult,
  type WebSearchConfig,
  type WebSearcher,
} from "./search.ts";
export { createWebTools, untrustedNotice, wrapUntrusted, type WebToolsOptions } from "./tools.ts";
