/**
 * The Slack part of the store (slack-types.ts, SLST1–SLST8) on SQLite and on Postgres: the same
 * cases run against both real databases, racing writers included.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { storeOpeners } from "./testing/openers.ts";
import type { Store } from "./types.ts";

const openers = await storeOpeners("roost-slack-");
const hash = (text: string) => createHash("sha256").update(text).digest("hex");

async function owners(store: Store) {
  const ann = await store.createAccount({ name: "ann", isAdmin: false });
  const ben = await store.createAccount({ name: "ben", isAdmin: false });
  const bot = await store.createBot({
    accountId: ann.id,
    name: "b",
    instructions: "",
    model: null,
  });
  return { ann: ann.id, ben: ben.id, botId: bot.id };
}
const link = (botId: string, accountId: string) => ({
  botId,
  accountId,
  slackTeamId: "T1",
  slackTeamName: "Co",
  botUserId: "UBOT",
  apiUrl: null,
  sealedToken: "v1:token",
  sealedSecret: "v1:secret",
  sealedAppToken: null,
  clientId: null,
  sealedClientSecret: null,
});

describe.each(openers)("slack on %s", (_name, open) => {
  async function withStore(run: (store: Store) => Promise<void>) {
    const { store, close } = await open!();
    try {
      await run(store);
    } finally {
      await close();
    }
  }

  it.skipIf(open === undefined)(
    "SLST1 one link per bot, replaced by a relink; its error is set once and cleared; audited; gone with the bot",
    () =>
      withStore(async (store) => {
        const { ann, botId } = await owners(store);
        await store.putSlackLink(link(botId, ann));
        await store.putSlackLink({ ...link(botId, ann), slackTeamId: "T2", sealedToken: "v1:new" });
        expect(await store.listSocketModeSlackLinks()).toEqual([]);
        await store.putSlackLink({
          ...link(botId, ann),
          slackTeamId: "T2",
          sealedToken: "v1:new",
          sealedAppToken: "v1:app",
        });
        expect((await store.listSocketModeSlackLinks()).map((found) => found.botId)).toEqual([
          botId,
        ]);
        const stored = await store.getSlackLink(botId);
        expect(stored).toMatchObject({ slackTeamId: "T2", sealedToken: "v1:new", lastError: null });
        const error = { message: "slack: chat.update answered token_revoked", retryAfterMs: null };
        expect(await store.setSlackLinkError(botId, error)).toBe(true);
        expect(await store.setSlackLinkError(botId, error)).toBe(false); // SLK5: once
        expect((await store.getSlackLink(botId))?.lastError).toBe(error.message);
        expect(await store.setSlackLinkError(botId, null)).toBe(true);
        expect(await store.setSlackLinkError(botId, null)).toBe(false);
        const actions = (await store.listAudit({ accountId: ann })).map((entry) => entry.action);
        expect(actions.filter((action) => action === "slack.link")).toHaveLength(3);
        await store.deleteBot({ id: botId, actorAccountId: ann });
        expect(await store.getSlackLink(botId)).toBeUndefined();
      }),
  );

  it.skipIf(open === undefined)("SLST2 racing events of one place get one conversation", () =>
    withStore(async (store) => {
      const { ann, botId } = await owners(store);
      const made = await Promise.all(
        [1, 2, 3, 4].map(() =>
          store.createConversation({ accountId: ann, botId, title: "t", place: "shared" }),
        ),
      );
      const places = await Promise.all(
        made.map((conversation) =>
          store.putSlackPlace({
            botId,
            placeKey: "thread:T1:C1:1.0",
            conversationId: conversation.id,
            channel: "C1",
            threadTs: "1.0",
          }),
        ),
      );
      expect(new Set(places.map((place) => place.conversationId)).size).toBe(1);
      expect((await store.slackPlaceOfConversation(places[0]!.conversationId))?.placeKey).toBe(
        "thread:T1:C1:1.0",
      );
    }),
  );

  it.skipIf(open === undefined)(
    "SLST3 a link token opens once, for one account; only the same Slack person's code links; expired ones never",
    () =>
      withStore(async (store) => {
        const { ann, ben, botId } = await owners(store);
        const now = Date.now();
        await store.createSlackLinkToken({
          tokenHash: hash("t1"),
          botId,
          slackTeamId: "T1",
          slackUserId: "U1",
          expiresAt: now + 60_000,
        });
        const opens = await Promise.all([
          store.openSlackLinkToken(hash("t1"), ann, hash("CODE1")),
          store.openSlackLinkToken(hash("t1"), ben, hash("CODE2")),
        ]);
        expect(opens.filter((opened) => opened !== undefined)).toHaveLength(1);
        const winner =
          opens[0] !== undefined
            ? { account: ann, code: "CODE1" }
            : { account: ben, code: "CODE2" };
        // Another Slack person, or a wrong code: nothing.
        const confirm = (user: string, code: string) =>
          store.confirmSlackPerson({
            slackTeamId: "T1",
            slackUserId: user,
            codeHash: hash(code),
            openedAfter: now - 60_000,
          });
        expect(await confirm("U2", winner.code)).toBeUndefined();
        expect(await confirm("U1", "WRONG")).toBeUndefined();
        expect(await store.slackPersonAccount("T1", "U1")).toBeUndefined();
        const confirmed = await Promise.all([
          confirm("U1", winner.code),
          confirm("U1", winner.code),
        ]);
        expect(confirmed.filter((account) => account !== undefined)).toEqual([winner.account]);
        expect(await store.slackPersonAccount("T1", "U1")).toBe(winner.account);
        // An expired token never opens.
        await store.createSlackLinkToken({
          tokenHash: hash("t2"),
          botId,
          slackTeamId: "T1",
          slackUserId: "U3",
          expiresAt: now - 1,
        });
        expect(await store.openSlackLinkToken(hash("t2"), ann, hash("X"))).toBeUndefined();
      }),
  );

  it.skipIf(open === undefined)(
    "SLST4 a turn's first working message wins and it is marked replied once",
    () =>
      withStore(async (store) => {
        const first = await store.putSlackTurn({
          turnId: "turn1",
          conversationId: "c",
          workingTs: "1.1",
        });
        const second = await store.putSlackTurn({
          turnId: "turn1",
          conversationId: "c",
          workingTs: "1.2",
        });
        expect(first.workingTs).toBe("1.1");
        expect(second.workingTs).toBe("1.1");
        const marks = await Promise.all([
          store.markSlackTurnReplied("turn1", "c"),
          store.markSlackTurnReplied("turn1", "c"),
        ]);
        expect(marks.filter(Boolean)).toHaveLength(1);
        expect(await store.markSlackTurnReplied("turn2", "c")).toBe(true);
        expect((await store.getSlackTurn("turn2"))?.workingTs).toBeNull();
      }),
  );

  it.skipIf(open === undefined)(
    "SLST5 one install per (bot, workspace), replaced by a reinstall, gone with its link",
    () =>
      withStore(async (store) => {
        const { ann, botId } = await owners(store);
        await store.putSlackLink({
          ...link(botId, ann),
          clientId: "123.456",
          sealedClientSecret: "v1:cs",
        });
        const install = (team: string, token: string) => ({
          botId,
          slackTeamId: team,
          slackTeamName: `Co ${team}`,
          botUserId: `UBOT${team}`,
          sealedToken: token,
          installedBy: ann,
        });
        await store.putSlackInstall(install("T1", "v1:a"));
        await store.putSlackInstall(install("T2", "v1:b"));
        await store.putSlackInstall(install("T1", "v1:c"));
        expect((await store.listSlackInstalls(botId)).map((found) => found.sealedToken)).toEqual([
          "v1:c",
          "v1:b",
        ]);
        expect((await store.getSlackLink(botId))?.clientId).toBe("123.456");
        expect(await store.deleteSlackInstall(botId, "T2", ann)).toBe(true);
        expect(await store.deleteSlackInstall(botId, "T2", ann)).toBe(false);
        expect(await store.getSlackInstall(botId, "T2")).toBeUndefined();
        expect(await store.deleteSlackLink(botId)).toBe(true);
        expect(await store.listSlackInstalls(botId)).toEqual([]);
      }),
  );

  it.skipIf(open === undefined)(
    "SLST8 sign-in links and install states expired over a day ago are removed by the next one made",
    () =>
      withStore(async (store) => {
        const { ann, botId } = await owners(store);
        const day = 24 * 60 * 60 * 1000;
        const token = (name: string, expiresAt: number) =>
          store.createSlackLinkToken({
            tokenHash: hash(name),
            botId,
            slackTeamId: "T1",
            slackUserId: "U1",
            expiresAt,
          });
        const state = (name: string, expiresAt: number) =>
          store.createSlackOAuthState({ stateHash: name, botId, accountId: ann, expiresAt });
        await token("old", Date.now() - 2 * day);
        await token("recent", Date.now() - 60_000);
        await state("old", Date.now() - 2 * day);
        await state("recent", Date.now() - 60_000);
        // Made again under the same key: only a removed row leaves room for it.
        await token("new", Date.now() + 60_000);
        await state("new", Date.now() + 60_000);
        await expect(token("recent", Date.now() + 60_000)).rejects.toThrow();
        await expect(state("recent", Date.now() + 60_000)).rejects.toThrow();
        await token("old", Date.now() + 60_000);
        await state("old", Date.now() + 60_000);
        expect(await store.openSlackLinkToken(hash("old"), ann, hash("C"))).toBeDefined();
        expect(await store.takeSlackOAuthState("old", botId)).toBe(ann);
      }),
  );

  it.skipIf(open === undefined)(
    "SLST6 a state is taken once, only for its bot, and not after it expires",
    () =>
      withStore(async (store) => {
        const { ann, botId } = await owners(store);
        await store.createSlackOAuthState({
          stateHash: "s1",
          botId,
          accountId: ann,
          expiresAt: Date.now() + 60_000,
        });
        await store.createSlackOAuthState({
          stateHash: "s2",
          botId,
          accountId: ann,
          expiresAt: Date.now() - 1,
        });
        expect(await store.takeSlackOAuthState("s1", "another-bot")).toBeUndefined();
        const takes = await Promise.all([
          store.takeSlackOAuthState("s1", botId),
          store.takeSlackOAuthState("s1", botId),
        ]);
        expect(takes.filter((taken) => taken === ann)).toHaveLength(1);
        expect(await store.takeSlackOAuthState("s1", botId)).toBeUndefined();
        expect(await store.takeSlackOAuthState("s2", botId)).toBeUndefined();
        expect(await store.takeSlackOAuthState("unknown", botId)).toBeUndefined();
      }),
  );

  it.skipIf(open === undefined)("SLST7 a run's Slack thread: the first write wins", () =>
    withStore(async (store) => {
      const { botId } = await owners(store);
      const reply = { runId: "rrun_1", botId, slackTeamId: "T1", channel: "C1", threadTs: "1.1" };
      await store.putSlackRunReply(reply);
      await store.putSlackRunReply({ ...reply, channel: "C2" });
      expect(await store.getSlackRunReply("rrun_1")).toEqual(reply);
      expect(await store.getSlackRunReply("rrun_2")).toBeUndefined();
    }),
  );
});
