/** ROOST_WEB_SEARCH_* and ROOST_WEB_FETCH_*: resolved once at start, with fix-it messages. */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../errors/index.ts";
import { resolveConfig } from "./index.ts";

describe("web tools configuration", () => {
  it("offers no search by default; fetch limits have defaults", () => {
    expect(resolveConfig({}, {}).webTools).toEqual({
      search: undefined,
      fetchMaxBytes: 5_000_000,
      fetchTimeoutMs: 20_000,
    });
  });

  it("chooses a provider; Brave and Tavily default to their APIs", () => {
    expect(
      resolveConfig(
        {},
        { ROOST_WEB_SEARCH_PROVIDER: "searxng", ROOST_WEB_SEARCH_URL: "http://127.0.0.1:8888/" },
      ).webTools.search,
    ).toEqual({ provider: "searxng", baseUrl: "http://127.0.0.1:8888", apiKey: undefined });
    expect(
      resolveConfig({}, { ROOST_WEB_SEARCH_PROVIDER: "brave", ROOST_WEB_SEARCH_API_KEY: "k" })
        .webTools.search,
    ).toEqual({ provider: "brave", baseUrl: "https://api.search.brave.com", apiKey: "k" });
    expect(
      resolveConfig({}, { ROOST_WEB_SEARCH_PROVIDER: "tavily", ROOST_WEB_SEARCH_API_KEY: "tvly-1" })
        .webTools.search?.baseUrl,
    ).toBe("https://api.tavily.com");
  });

  it("says what is missing or wrong", () => {
    expect(() => resolveConfig({}, { ROOST_WEB_SEARCH_PROVIDER: "searxng" })).toThrow(
      /needs the instance's URL: set ROOST_WEB_SEARCH_URL/,
    );
    expect(() => resolveConfig({}, { ROOST_WEB_SEARCH_PROVIDER: "brave" })).toThrow(
      /needs an API key: set ROOST_WEB_SEARCH_API_KEY/,
    );
    expect(() => resolveConfig({}, { ROOST_WEB_SEARCH_PROVIDER: "google" })).toThrow(
      /must be searxng, brave or tavily, got "google"/,
    );
    expect(() => resolveConfig({}, { ROOST_WEB_SEARCH_API_KEY: "k" })).toThrow(ConfigError);
    expect(() => resolveConfig({}, { ROOST_WEB_FETCH_MAX_BYTES: "12" })).toThrow(
      /ROOST_WEB_FETCH_MAX_BYTES must be a whole number between 1024/,
    );
  });
});
