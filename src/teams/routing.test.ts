/** The routing table (routing.ts ROUTE1–ROUTE4), row by row, and what it means for secrets. */
import { describe, expect, it } from "vitest";
import { redactionAccountOf, secretsOwnersOf } from "../tools/index.ts";
import { routeTurn } from "./routing.ts";

const bot = { accountId: "acct_owner" };

describe("routeTurn", () => {
  it("the owner's own chat: the owner's computer, their secrets and the bot's; they approve", () => {
    const route = routeTurn({
      bot,
      conversation: { place: "direct" },
      talkerAccountId: "acct_owner",
      sharedAccountId: undefined,
    });
    expect(route).toMatchObject({
      row: "owner",
      computerAccountId: "acct_owner",
      approverAccountId: "acct_owner",
    });
    const context = { accountId: route.computerAccountId, botId: "bot_1", route };
    expect(secretsOwnersOf({ ...context, conversationId: "c", turnId: "t" })).toEqual({
      userAccountId: "acct_owner",
      botId: "bot_1",
    });
  });

  it("ROUTE2, ROUTE3: a teammate's chat: their computer and secrets only, never the bot owner's; they approve", () => {
    const route = routeTurn({
      bot,
      conversation: { place: "direct" },
      talkerAccountId: "acct_mate",
      sharedAccountId: "acct_shared",
    });
    expect(route).toMatchObject({
      row: "teammate",
      talkerAccountId: "acct_mate",
      computerAccountId: "acct_mate",
      approverAccountId: "acct_mate",
      redactionAccountId: "acct_mate",
    });
    const context = { accountId: "acct_mate", botId: "bot_1", conversationId: "c", turnId: "t" };
    expect(secretsOwnersOf({ ...context, route })).toEqual({
      userAccountId: "acct_mate",
      botId: null,
    });
  });

  it("ROUTE2, ROUTE4: a shared place: the bot's shared computer with the bot's own secrets, redacted", () => {
    const route = routeTurn({
      bot,
      conversation: { place: "shared" },
      talkerAccountId: "acct_mate",
      sharedAccountId: "acct_shared",
    });
    expect(route).toMatchObject({
      row: "shared",
      talkerAccountId: "acct_mate",
      computerAccountId: "acct_shared",
      approverAccountId: "acct_owner",
    });
    const context = { accountId: "acct_shared", botId: "bot_1", conversationId: "c", turnId: "t" };
    expect(secretsOwnersOf({ ...context, route })).toEqual({
      userAccountId: null,
      botId: "bot_1",
      consentedIn: "c",
    });
    expect(redactionAccountOf({ ...context, route })).toBe("acct_shared");
    expect(() =>
      routeTurn({
        bot,
        conversation: { place: "shared" },
        talkerAccountId: "acct_mate",
        sharedAccountId: undefined,
      }),
    ).toThrow(/shared computer/);
  });

  it("no route (a caller outside the loop): the account's own chat", () => {
    const context = { accountId: "acct_a", botId: "bot_1", conversationId: "c", turnId: "t" };
    expect(secretsOwnersOf(context)).toEqual({ userAccountId: "acct_a", botId: "bot_1" });
    expect(redactionAccountOf(context)).toBe("acct_a");
  });
});
