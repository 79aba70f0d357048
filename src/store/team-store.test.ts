/**
 * The teams part of the store (team-types.ts, TEAM1–TEAM5), team bots and the conversation's
 * place, on SQLite and on Postgres: the same cases run against both real databases, racing
 * writers included.
 */
import { describe, expect, it } from "vitest";
import { storeOpeners } from "./testing/openers.ts";
import type { Store } from "./types.ts";

const openers = await storeOpeners("roost-teams-");

async function people(store: Store) {
  const ann = await store.createAccount({ name: "ann", isAdmin: false });
  const ben = await store.createAccount({ name: "ben", isAdmin: false });
  const cat = await store.createAccount({ name: "cat", isAdmin: false });
  return { ann: ann.id, ben: ben.id, cat: cat.id };
}

describe.each(openers)("teams on %s", (_name, open) => {
  async function withStore(run: (store: Store) => Promise<void>) {
    const { store, close } = await open!();
    try {
      await run(store);
    } finally {
      await close();
    }
  }

  it.skipIf(open === undefined)(
    "a new team has its creator as owner; TEAM2 putting a member twice changes the role; TEAM5 audited",
    () =>
      withStore(async (store) => {
        const { ann, ben } = await people(store);
        const team = await store.createTeam({ name: "Ops", ownerAccountId: ann, limit: 50 });
        expect(await store.getTeamRole(team.id, ann)).toBe("owner");
        expect(
          await store.putTeamMember({
            teamId: team.id,
            accountId: ben,
            role: "member",
            actorAccountId: ann,
          }),
        ).toEqual({ created: true });
        expect(
          await store.putTeamMember({
            teamId: team.id,
            accountId: ben,
            role: "admin",
            actorAccountId: ann,
          }),
        ).toEqual({ created: false });
        const members = await store.listTeamMembers(team.id);
        expect(members.map((member) => [member.name, member.role])).toEqual([
          ["ann", "owner"],
          ["ben", "admin"],
        ]);
        expect((await store.listTeamsOf(ben)).map((t) => [t.name, t.role])).toEqual([
          ["Ops", "admin"],
        ]);
        const actions = (await store.listAudit({ accountId: ann })).map((entry) => entry.action);
        expect(actions).toEqual(expect.arrayContaining(["team.create", "team.member.put"]));
        expect(await store.getTeam("team_missing")).toBeUndefined();
        await expect(
          store.putTeamMember({
            teamId: "team_missing",
            accountId: ben,
            role: "member",
            actorAccountId: ann,
          }),
        ).rejects.toMatchObject({ code: "not_found" });
      }),
  );

  it.skipIf(open === undefined)(
    "TEAM1: the last owner can neither leave nor be demoted, also when two owners race to leave",
    () =>
      withStore(async (store) => {
        const { ann, ben } = await people(store);
        const team = await store.createTeam({ name: "Ops", ownerAccountId: ann, limit: 50 });
        await expect(
          store.removeTeamMember({ teamId: team.id, accountId: ann, actorAccountId: ann }),
        ).rejects.toMatchObject({
          code: "conflict",
          message: expect.stringContaining("another member an owner"),
        });
        await expect(
          store.putTeamMember({
            teamId: team.id,
            accountId: ann,
            role: "member",
            actorAccountId: ann,
          }),
        ).rejects.toMatchObject({ code: "conflict" });
        await store.putTeamMember({
          teamId: team.id,
          accountId: ben,
          role: "owner",
          actorAccountId: ann,
        });
        const results = await Promise.allSettled([
          store.removeTeamMember({ teamId: team.id, accountId: ann, actorAccountId: ann }),
          store.removeTeamMember({ teamId: team.id, accountId: ben, actorAccountId: ben }),
        ]);
        expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
        const owners = (await store.listTeamMembers(team.id)).filter((m) => m.role === "owner");
        expect(owners).toHaveLength(1);
      }),
  );

  it.skipIf(open === undefined)(
    "TEAM3: a bot is published only to its owner's team, and leaves it with its owner",
    () =>
      withStore(async (store) => {
        const { ann, ben, cat } = await people(store);
        const team = await store.createTeam({ name: "Ops", ownerAccountId: ann, limit: 50 });
        await store.putTeamMember({
          teamId: team.id,
          accountId: ben,
          role: "admin",
          actorAccountId: ann,
        });
        await store.putTeamMember({
          teamId: team.id,
          accountId: cat,
          role: "member",
          actorAccountId: ann,
        });
        const outsider = await store.createAccount({ name: "dan", isAdmin: false });
        await expect(
          store.createBot({
            accountId: outsider.id,
            name: "x",
            instructions: "",
            model: null,
            teamId: team.id,
          }),
        ).rejects.toMatchObject({ code: "not_found" });
        expect(await store.listBots(outsider.id)).toEqual([]); // nothing stored half-way
        const bot = await store.createBot({
          accountId: ben,
          name: "helper",
          instructions: "",
          model: null,
          teamId: team.id,
        });
        expect(bot.teamId).toBe(team.id);
        expect((await store.getBot(bot.id))?.teamId).toBe(team.id);
        const other = await store.createBot({
          accountId: outsider.id,
          name: "y",
          instructions: "",
          model: null,
        });
        await expect(store.updateBot(other.id, { teamId: team.id })).rejects.toMatchObject({
          code: "not_found",
        });
        expect((await store.getBot(other.id))?.teamId).toBeNull();
        expect((await store.listTeamBotsFor(cat)).map((b) => b.id)).toEqual([bot.id]);
        expect(await store.listTeamBotsFor(ben)).toEqual([]); // own bots are in listBots
        expect(await store.listTeamBotsFor(outsider.id)).toEqual([]);
        expect(
          await store.removeTeamMember({ teamId: team.id, accountId: ben, actorAccountId: ann }),
        ).toBe(true);
        expect((await store.getBot(bot.id))?.teamId).toBeNull();
        expect(await store.listTeamBotsFor(cat)).toEqual([]);
        expect(
          await store.removeTeamMember({ teamId: team.id, accountId: ben, actorAccountId: ann }),
        ).toBe(false);
        const removal = (await store.listAudit({ accountId: ann })).find(
          (e) => e.action === "team.member.remove",
        );
        expect(removal?.detail).toMatchObject({ accountId: ben, botsUnpublished: 1 });
        const unpublished = await store.updateBot(bot.id, { teamId: null });
        expect(unpublished.teamId).toBeNull();
      }),
  );

  it.skipIf(open === undefined)(
    "TEAM4: an invitation is accepted once, also by racing accepts; expired and unknown ones never",
    () =>
      withStore(async (store) => {
        const { ann, ben, cat } = await people(store);
        const team = await store.createTeam({ name: "Ops", ownerAccountId: ann, limit: 50 });
        const at = 1_000_000;
        await store.createTeamInvitation({
          teamId: team.id,
          role: "member",
          tokenHash: "h1",
          expiresAt: at + 10,
          actorAccountId: ann,
          limit: 100,
          now: at,
        });
        const [first, second] = await Promise.all([
          store.acceptTeamInvitation({ tokenHash: "h1", accountId: ben, now: at }),
          store.acceptTeamInvitation({ tokenHash: "h1", accountId: cat, now: at }),
        ]);
        expect([first.outcome, second.outcome].sort()).toEqual(["accepted", "used"]);
        const members = (await store.listTeamMembers(team.id)).map((m) => m.name);
        expect(members).toHaveLength(2);
        await store.createTeamInvitation({
          teamId: team.id,
          role: "admin",
          tokenHash: "h2",
          expiresAt: at + 10,
          actorAccountId: ann,
          limit: 100,
          now: at,
        });
        expect(
          await store.acceptTeamInvitation({ tokenHash: "h2", accountId: cat, now: at + 10 }),
        ).toEqual({ outcome: "expired" });
        expect(
          await store.acceptTeamInvitation({ tokenHash: "nope", accountId: cat, now: at }),
        ).toEqual({ outcome: "unknown" });
        // An owner who accepts a member's invitation stays an owner.
        await store.createTeamInvitation({
          teamId: team.id,
          role: "member",
          tokenHash: "h3",
          expiresAt: at + 10,
          actorAccountId: ann,
          limit: 100,
          now: at,
        });
        expect(
          await store.acceptTeamInvitation({ tokenHash: "h3", accountId: ann, now: at }),
        ).toMatchObject({
          outcome: "accepted",
          role: "owner",
          alreadyMember: true,
        });
        const accepts = (await store.listAudit()).filter(
          (e) => e.action === "team.invitation.accept",
        );
        expect(accepts).toHaveLength(2);
      }),
  );

  it.skipIf(open === undefined)(
    "TEAM6: a bot's shared-computer account is made once, also by racing first turns",
    () =>
      withStore(async (store) => {
        const { ann } = await people(store);
        const bot = await store.createBot({
          accountId: ann,
          name: "b",
          instructions: "",
          model: null,
        });
        const made = await Promise.all(
          [1, 2, 3].map(() => store.ensureBotSharedAccount({ botId: bot.id, botName: bot.name })),
        );
        expect(new Set(made).size).toBe(1);
        expect(made[0]).not.toBe(ann);
        expect((await store.getAccount(made[0]!))?.name).toBe("shared computer of b");
        expect(await store.listApiTokens(made[0]!)).toEqual([]);
        expect(await store.listTeamsOf(made[0]!)).toEqual([]);
        expect(await store.ensureBotSharedAccount({ botId: bot.id, botName: "b" })).toBe(made[0]);
      }),
  );

  it.skipIf(open === undefined)(
    "TEAM7: a consent is one row per key, listed by place, bot and owner, and audited",
    () =>
      withStore(async (store) => {
        const { ann, ben } = await people(store);
        const consent = {
          botId: "bot_1",
          placeId: "conv_1",
          ownerAccountId: ben,
          kind: "secret",
          name: "K",
        };
        await Promise.all([store.grantConsent(consent), store.grantConsent(consent)]);
        await store.grantConsent(consent);
        await store.grantConsent({ ...consent, placeId: "conv_2" });
        expect(await store.listConsents({ botId: "bot_1", placeId: "conv_1" })).toHaveLength(1);
        expect(await store.listConsents({ botId: "bot_1" })).toHaveLength(2);
        expect(await store.listConsents({ ownerAccountId: ben })).toHaveLength(2);
        expect(await store.listConsents({ ownerAccountId: ann })).toEqual([]);
        expect(await store.revokeConsent({ ...consent, ownerAccountId: ann })).toBe(false);
        expect(await store.revokeConsent(consent)).toBe(true);
        expect(await store.revokeConsent(consent)).toBe(false);
        expect(await store.listConsents({ botId: "bot_1", placeId: "conv_1" })).toEqual([]);
        const actions = (await store.listAudit({ accountId: ben })).map((entry) => entry.action);
        expect(actions.filter((action) => action === "consent.grant")).toHaveLength(2);
        expect(actions.filter((action) => action === "consent.revoke")).toHaveLength(1);
      }),
  );

  it.skipIf(open === undefined)(
    "TEAM8: a flood of teams or open invitations stops at the limit, also when racing",
    () =>
      withStore(async (store) => {
        const { ann } = await people(store);
        const made = await Promise.allSettled(
          Array.from({ length: 6 }, (_, index) =>
            store.createTeam({ name: `t${index}`, ownerAccountId: ann, limit: 4 }),
          ),
        );
        expect(made.filter((result) => result.status === "fulfilled")).toHaveLength(4);
        expect(made.find((result) => result.status === "rejected")).toMatchObject({
          reason: { code: "conflict", message: expect.stringContaining("leave one") },
        });
        expect(await store.listTeamsOf(ann)).toHaveLength(4);
        const teamId = (await store.listTeamsOf(ann))[0]!.id;
        const invite = (hash: string, expiresAt: number) =>
          store.createTeamInvitation({
            teamId,
            role: "member",
            tokenHash: hash,
            expiresAt,
            actorAccountId: ann,
            limit: 3,
            now: 1000,
          });
        await invite("old", 500); // expired: not open
        const invited = await Promise.allSettled(
          ["a", "b", "c", "d", "e"].map((hash) => invite(hash, 5000)),
        );
        expect(invited.filter((result) => result.status === "fulfilled")).toHaveLength(3);
      }),
  );

  it.skipIf(open === undefined)("a conversation's place is direct unless created shared", () =>
    withStore(async (store) => {
      const { ann } = await people(store);
      const bot = await store.createBot({
        accountId: ann,
        name: "b",
        instructions: "",
        model: null,
      });
      const direct = await store.createConversation({ accountId: ann, botId: bot.id, title: "d" });
      const shared = await store.createConversation({
        accountId: ann,
        botId: bot.id,
        title: "s",
        place: "shared",
      });
      expect(direct.place).toBe("direct");
      expect((await store.getConversation(direct.id))?.place).toBe("direct");
      expect((await store.getConversation(shared.id))?.place).toBe("shared");
      expect((await store.listConversations(ann)).map((c) => c.place).sort()).toEqual([
        "direct",
        "shared",
      ]);
    }),
  );
});
