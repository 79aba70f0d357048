/** ROOST_PREVIEW_*: the port previews' domain, lifetimes and limits, resolved once at start. */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../errors/index.ts";
import { resolveConfig } from "./index.ts";

describe("ROOST_PREVIEW_*", () => {
  it("defaults: no preview domain (*.localhost links), 5 min links, 1 h sessions, 32 connections, 5 min idle", () => {
    expect(resolveConfig({}, {}).previews).toEqual({
      url: undefined,
      linkTtlMs: 300_000,
      sessionTtlMs: 3_600_000,
      maxConnectionsPerComputer: 32,
      idleTimeoutMs: 300_000,
    });
    const set = resolveConfig(
      { "preview-url": "https://preview.example.com/" },
      {
        ROOST_PREVIEW_LINK_TTL_MS: "60000",
        ROOST_PREVIEW_SESSION_TTL_MS: "120000",
        ROOST_PREVIEW_MAX_CONNECTIONS: "4",
        ROOST_PREVIEW_IDLE_TIMEOUT_MS: "2000",
      },
    ).previews;
    expect(set).toEqual({
      url: "https://preview.example.com",
      linkTtlMs: 60_000,
      sessionTtlMs: 120_000,
      maxConnectionsPerComputer: 4,
      idleTimeoutMs: 2000,
    });
  });

  it("a preview URL with a path, a query, no dot in its name or another scheme stops start-up, saying what it is", () => {
    for (const value of [
      "https://example.com/previews",
      "https://example.com/?x=1",
      "http://localhost",
      "ftp://preview.example.com",
    ]) {
      expect(() => resolveConfig({}, { ROOST_PREVIEW_URL: value }), value).toThrow(ConfigError);
    }
    expect(() => resolveConfig({}, { ROOST_PREVIEW_URL: "https://example.com/x" })).toThrow(
      /scheme and domain under which previews get hosts of their own/,
    );
    expect(() => resolveConfig({}, { ROOST_PREVIEW_LINK_TTL_MS: "5" })).toThrow(
      /ROOST_PREVIEW_LINK_TTL_MS must be a whole number between 10000 and 86400000/,
    );
  });
});
