import { describe, expect, it } from "vitest";
import type { Bot } from "../store/index.ts";
import { askToolNames } from "./mcp-server-routes.ts";

const bot = (id: string, name: string) => ({ id, name }) as Bot;

describe("askToolNames (MCPS2)", () => {
  it("sanitises names to ^[a-zA-Z0-9_-]{1,64}$ and keeps them unique", () => {
    const names = askToolNames([
      bot("b1", "Research bot"),
      bot("b2", "research/bot"),
      bot("b3", "Research bot"),
      bot("b4", "ünïcode 🙂"),
      bot("b5", "x".repeat(100)),
      bot("b6", "x".repeat(100)),
      bot("b7", "../../etc"),
    ]);
    const entries = [...names].map(([name, found]) => [name, found.id]);
    expect(entries).toEqual([
      ["ask_Research_bot", "b1"],
      ["ask_research_bot", "b2"],
      ["ask_Research_bot_2", "b3"],
      ["ask__n_code___", "b4"],
      [`ask_${"x".repeat(60)}`, "b5"],
      [`ask_${"x".repeat(58)}_2`, "b6"],
      ["ask_______etc", "b7"],
    ]);
    for (const name of names.keys()) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });
});
