/**
 * The teams routes (team-routes.ts TAPI1–TAPI4, teams/roles.ts TROLE1–TROLE4) and team bots in
 * the bots and conversations routes (teams/access.ts TACC1–TACC3): every endpoint with bad input
 * and with another team's (or no team's) caller, invitation links reused, expired and guessed, a
 * member trying to edit a team bot, a forged author, and a removed member losing access at once.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { createEventHub } from "../events/index.ts";
import type { Api } from "../protocol/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";

let dir: string;
let store: Store;
let app: ReturnType<typeof createApi>;
let now: number;
interface Person {
  id: string;
  token: string;
}
let owner: Person; // owns the team and the team bot
let admin: Person;
let member: Person;
let outsider: Person; // in another team
let kicked: string[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-teams-api-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  now = Date.parse("2026-12-01T12:00:00Z");
  kicked = [];
  app = createApi({
    store,
    events: createEventHub(),
    kick: async (conversationId) => {
      kicked.push(conversationId);
    },
    interrupt: () => false,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: () => undefined,
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 1024 * 1024,
    limits: { requestsPerMinute: 100_000 },
    publicUrl: "https://roost.example",
    clock: () => now,
  });
  const person = async (name: string): Promise<Person> => {
    const account = await store.createAccount({ name, isAdmin: false });
    return { id: account.id, token: (await issueApiToken(store, account.id, "t")).token };
  };
  owner = await person("olga");
  admin = await person("adam");
  member = await person("mia");
  outsider = await person("otto");
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function call<T = Record<string, unknown>>(
  as: Person,
  method: string,
  path: string,
  body?: unknown,
  options: { raw?: string; contentType?: string } = {},
): Promise<{ status: number; body: T & { error?: { code: string; message: string } } }> {
  const hasBody = body !== undefined || options.raw !== undefined;
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${as.token}`,
      ...(hasBody ? { "content-type": options.contentType ?? "application/json" } : {}),
    },
    ...(options.raw !== undefined
      ? { body: options.raw }
      : body === undefined
        ? {}
        : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text === "" ? {} : JSON.parse(text)) as never };
}

/** A team of olga (owner), adam (admin) and mia (member); otto has a team of his own. */
async function team() {
  const created = await call<Api.TeamDetail>(owner, "POST", "/v1/teams", { name: "Ops" });
  expect(created.status).toBe(201);
  const id = created.body.id;
  expect(
    (await call(owner, "POST", `/v1/teams/${id}/members`, { accountId: admin.id, role: "admin" }))
      .status,
  ).toBe(201);
  expect(
    (await call(admin, "POST", `/v1/teams/${id}/members`, { accountId: member.id, role: "member" }))
      .status,
  ).toBe(201);
  const other = await call<Api.TeamDetail>(outsider, "POST", "/v1/teams", { name: "Other" });
  return { id, otherId: other.body.id };
}

describe("teams", () => {
  it("POST /v1/teams makes the caller owner; GET lists mine and shows members", async () => {
    const { id, otherId } = await team();
    const detail = await call<Api.TeamDetail>(member, "GET", `/v1/teams/${id}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ id, name: "Ops", role: "member" });
    expect(detail.body.members.map((m) => [m.name, m.role])).toEqual([
      ["olga", "owner"],
      ["adam", "admin"],
      ["mia", "member"],
    ]);
    const mine = await call<Api.TeamList>(owner, "GET", "/v1/teams");
    expect(mine.body.teams.map((t) => [t.id, t.role])).toEqual([[id, "owner"]]);
    expect((await call<Api.TeamList>(outsider, "GET", "/v1/teams")).body.teams[0]?.id).toBe(
      otherId,
    );
  });

  it("TAPI4: bad bodies are 400s that say how to fix them, and store nothing", async () => {
    const { id } = await team();
    const bad: [string, string, unknown, string][] = [
      ["POST", "/v1/teams", {}, "name"],
      ["POST", "/v1/teams", { name: "x".repeat(81) }, "name"],
      ["POST", "/v1/teams", { name: "Ops", owner: member.id }, "owner"],
      ["POST", `/v1/teams/${id}/members`, { accountId: member.id }, "role"],
      ["POST", `/v1/teams/${id}/members`, { accountId: member.id, role: "boss" }, "owner"],
      ["DELETE", `/v1/teams/${id}/members`, {}, "accountId"],
      ["POST", `/v1/teams/${id}/invitations`, { role: "king" }, "role"],
      ["POST", `/v1/teams/${id}/invitations`, { expiresInMs: 5 }, "one minute"],
    ];
    for (const [method, path, body, hint] of bad) {
      const answer = await call(owner, method, path, body);
      expect(answer.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
      expect(answer.body.error?.message).toContain(hint);
    }
    expect((await call(owner, "POST", "/v1/teams", undefined, { raw: "{" })).status).toBe(400);
    expect(
      (await call(owner, "POST", "/v1/teams", undefined, { raw: "x", contentType: "text/plain" }))
        .status,
    ).toBe(415);
    expect((await call(owner, "GET", "/v1/teams?x=1")).status).toBe(400);
    expect((await call<Api.TeamList>(owner, "GET", "/v1/teams")).body.teams).toHaveLength(1);
    expect((await store.listTeamMembers(id)).map((m) => m.role)).toEqual([
      "owner",
      "admin",
      "member",
    ]);
    const unknownAccount = await call(owner, "POST", `/v1/teams/${id}/members`, {
      accountId: "acct_nobody",
      role: "member",
    });
    expect(unknownAccount.status).toBe(404);
  });

  it("TAPI1: another team's id answers every route 404, exactly like a missing one", async () => {
    const { otherId } = await team();
    const routes: [string, string, unknown][] = [
      ["GET", "", undefined],
      ["POST", "/members", { accountId: owner.id, role: "owner" }],
      ["DELETE", "/members", { accountId: outsider.id }],
      ["POST", "/invitations", { role: "member" }],
    ];
    for (const [method, suffix, body] of routes) {
      const foreign = await call(owner, method, `/v1/teams/${otherId}${suffix}`, body);
      const missing = await call(owner, method, `/v1/teams/team_missing${suffix}`, body);
      expect(foreign.status, `${method} ${suffix}`).toBe(404);
      expect(missing.status).toBe(404);
      expect(foreign.body.error?.code).toBe(missing.body.error?.code);
    }
    // Nothing changed in otto's team.
    expect((await store.listTeamMembers(otherId)).map((m) => m.name)).toEqual(["otto"]);
  });

  it("TROLE2: members cannot add or remove others; admins cannot touch owners; 403 says who can", async () => {
    const { id } = await team();
    const byMember = await call(member, "POST", `/v1/teams/${id}/members`, {
      accountId: outsider.id,
      role: "member",
    });
    expect(byMember.status).toBe(403);
    expect(byMember.body.error?.message).toContain("owners and admins");
    expect(
      (await call(member, "DELETE", `/v1/teams/${id}/members`, { accountId: admin.id })).status,
    ).toBe(403);
    expect(
      (
        await call(admin, "POST", `/v1/teams/${id}/members`, {
          accountId: member.id,
          role: "owner",
        })
      ).status,
    ).toBe(403);
    const demote = await call(admin, "POST", `/v1/teams/${id}/members`, {
      accountId: owner.id,
      role: "member",
    });
    expect(demote.status).toBe(403);
    expect(demote.body.error?.message).toContain("only an owner");
    expect(
      (await call(admin, "DELETE", `/v1/teams/${id}/members`, { accountId: owner.id })).status,
    ).toBe(403);
    expect(await store.getTeamRole(id, owner.id)).toBe("owner");
    expect(await store.getTeamRole(id, outsider.id)).toBeUndefined();
    // An admin may re-role and remove members.
    expect(
      (
        await call(admin, "POST", `/v1/teams/${id}/members`, {
          accountId: member.id,
          role: "admin",
        })
      ).status,
    ).toBe(200);
    expect(await store.getTeamRole(id, member.id)).toBe("admin");
  });

  it("TROLE1, TROLE4: anyone may leave but the last owner, who gets a 409 saying what to do", async () => {
    const { id } = await team();
    const last = await call(owner, "DELETE", `/v1/teams/${id}/members`, { accountId: owner.id });
    expect(last.status).toBe(409);
    expect(last.body.error?.message).toContain("make another member an owner");
    expect(
      (await call(member, "DELETE", `/v1/teams/${id}/members`, { accountId: member.id })).status,
    ).toBe(204);
    expect((await call(member, "GET", `/v1/teams/${id}`)).status).toBe(404);
    expect(
      (await call(owner, "DELETE", `/v1/teams/${id}/members`, { accountId: member.id })).status,
    ).toBe(404);
    const audit = (await store.listAudit()).map((entry) => entry.action);
    expect(audit.filter((action) => action === "team.member.remove")).toHaveLength(1);
  });
});

describe("floods", () => {
  it("TEAM8: the 51st team of an account is a 409 that says what to do", async () => {
    for (let index = 0; index < 50; index++)
      expect((await call(member, "POST", "/v1/teams", { name: `t${index}` })).status).toBe(201);
    const over = await call(member, "POST", "/v1/teams", { name: "one more" });
    expect(over.status).toBe(409);
    expect(over.body.error?.message).toContain("at most 50 teams");
    expect((await call<Api.TeamList>(member, "GET", "/v1/teams")).body.teams).toHaveLength(50);
  });
});

describe("invitations", () => {
  it("TAPI3: a link is shown once, works once, and its token is not stored", async () => {
    const { id } = await team();
    const created = await call<Api.CreatedInvitation>(
      admin,
      "POST",
      `/v1/teams/${id}/invitations`,
      {
        role: "member",
      },
    );
    expect(created.status).toBe(201);
    const { token, url } = created.body;
    expect(url).toBe(`https://roost.example/teams/join#${token}`);
    expect(created.body.expiresAt).toBe(new Date(now + 7 * 24 * 3600 * 1000).toISOString());
    const accepted = await call<Api.AcceptedInvitation>(
      outsider,
      "POST",
      `/v1/invitations/${token}/accept`,
    );
    expect(accepted.status).toBe(200);
    expect(accepted.body.team).toMatchObject({ id, role: "member" });
    expect(await store.getTeamRole(id, outsider.id)).toBe("member");
    const again = await call(member, "POST", `/v1/invitations/${token}/accept`);
    expect(again.status).toBe(404);
    expect(again.body.error?.message).toContain("ask the team for a new one");
    const audit = JSON.stringify(await store.listAudit());
    expect(audit).toContain("team.invitation.create");
    expect(audit).toContain("team.invitation.accept");
    expect(audit).not.toContain(token);
  });

  it("TAPI3: expired, guessed and malformed tokens answer the same 404; the account is the caller's", async () => {
    const { id } = await team();
    const created = await call<Api.CreatedInvitation>(owner, "POST", `/v1/teams/${id}/invitations`);
    expect(created.status).toBe(201);
    expect(created.body.role).toBe("member");
    now += 7 * 24 * 3600 * 1000;
    const expired = await call(outsider, "POST", `/v1/invitations/${created.body.token}/accept`);
    const guessed = await call(outsider, "POST", `/v1/invitations/rti_${"A".repeat(43)}/accept`);
    const malformed = await call(outsider, "POST", "/v1/invitations/nope/accept");
    for (const answer of [expired, guessed, malformed]) {
      expect(answer.status).toBe(404);
      expect(answer.body.error?.message).toBe(expired.body.error?.message);
    }
    expect(await store.getTeamRole(id, outsider.id)).toBeUndefined();
    // A body naming someone else is refused: the accepting account is the token's.
    const fresh = await call<Api.CreatedInvitation>(owner, "POST", `/v1/teams/${id}/invitations`);
    const forged = await call(outsider, "POST", `/v1/invitations/${fresh.body.token}/accept`, {
      accountId: member.id,
    });
    expect(forged.status).toBe(400);
    expect(await store.getTeamRole(id, outsider.id)).toBeUndefined();
  });

  it("TROLE2: a member cannot invite; an admin cannot invite an owner", async () => {
    const { id } = await team();
    expect((await call(member, "POST", `/v1/teams/${id}/invitations`)).status).toBe(403);
    const asOwner = await call(admin, "POST", `/v1/teams/${id}/invitations`, { role: "owner" });
    expect(asOwner.status).toBe(403);
    expect(
      (await call(owner, "POST", `/v1/teams/${id}/invitations`, { role: "owner" })).status,
    ).toBe(201);
  });

  it("an invitation of one team never admits to another", async () => {
    const { id, otherId } = await team();
    const created = await call<Api.CreatedInvitation>(
      outsider,
      "POST",
      `/v1/teams/${otherId}/invitations`,
    );
    await call(member, "POST", `/v1/invitations/${created.body.token}/accept`);
    expect(await store.getTeamRole(otherId, member.id)).toBe("member");
    expect(await store.getTeamRole(id, member.id)).toBe("member");
    expect(await store.getTeamRole(id, outsider.id)).toBeUndefined();
  });
});

describe("consents", () => {
  it("GET and DELETE /v1/me/consents: only one's own; bad input is a 400; another's is a 404", async () => {
    const consent = { botId: "bot_x", placeId: "conv_x", kind: "secret", name: "MATE_KEY" };
    await store.grantConsent({ ...consent, ownerAccountId: member.id });
    const mine = await call<Api.ConsentList>(member, "GET", "/v1/me/consents");
    expect(mine.body.consents).toEqual([expect.objectContaining(consent)]);
    expect((await call<Api.ConsentList>(owner, "GET", "/v1/me/consents")).body.consents).toEqual(
      [],
    );
    const bad = await call(member, "DELETE", "/v1/me/consents", { botId: "bot_x" });
    expect(bad.status).toBe(400);
    expect(bad.body.error?.message).toContain("placeId");
    const forged = await call(member, "DELETE", "/v1/me/consents", {
      ...consent,
      ownerAccountId: owner.id,
    });
    expect(forged.status).toBe(400);
    expect((await call(owner, "DELETE", "/v1/me/consents", consent)).status).toBe(404);
    expect(await store.listConsents({ ownerAccountId: member.id })).toHaveLength(1);
    expect((await call(member, "DELETE", "/v1/me/consents", consent)).status).toBe(204);
    expect((await call(member, "DELETE", "/v1/me/consents", consent)).status).toBe(404);
  });
});

describe("team bots", () => {
  async function teamBot() {
    const teams = await team();
    const bot = await call<Api.Bot>(owner, "POST", "/v1/bots", {
      name: "ops-bot",
      instructions: "Keep the lights on.",
      teamId: teams.id,
    });
    expect(bot.status).toBe(201);
    expect(bot.body).toMatchObject({ teamId: teams.id, own: true });
    return { ...teams, botId: bot.body.id };
  }

  it("members list a team bot with its team marker, read it and start conversations with it", async () => {
    const { id, botId } = await teamBot();
    const listed = await call<Api.BotList>(member, "GET", "/v1/bots");
    expect(listed.body.bots).toHaveLength(1);
    expect(listed.body.bots[0]).toMatchObject({
      id: botId,
      own: false,
      team: { id, name: "Ops", ownerName: "olga" },
    });
    expect((await call<Api.Bot>(member, "GET", `/v1/bots/${botId}`)).body.instructions).toBe(
      "Keep the lights on.",
    );
    const conversation = await call<Api.Conversation>(member, "POST", "/v1/conversations", {
      botId,
    });
    expect(conversation.status).toBe(201);
    expect(conversation.body.place).toBe("direct");
    const posted = await call(
      member,
      "POST",
      `/v1/conversations/${conversation.body.id}/messages`,
      {
        text: "hi",
        clientMessageId: "c1",
      },
    );
    expect(posted.status).toBe(202);
    expect(kicked).toEqual([conversation.body.id]);
    // The owner's list does not mark their own bot as a teammate's.
    const own = await call<Api.BotList>(owner, "GET", "/v1/bots");
    expect(own.body.bots[0]?.team).toBeUndefined();
  });

  it("TACC1: another team's member and a stranger see no team bot: 404 like a missing one", async () => {
    const { botId } = await teamBot();
    expect((await call<Api.BotList>(outsider, "GET", "/v1/bots")).body.bots).toEqual([]);
    expect((await call(outsider, "GET", `/v1/bots/${botId}`)).status).toBe(404);
    expect((await call(outsider, "POST", "/v1/conversations", { botId })).status).toBe(404);
    expect((await call(outsider, "PATCH", `/v1/bots/${botId}`, { name: "mine" })).status).toBe(404);
    expect((await call(outsider, "GET", `/v1/bots/${botId}/memory`)).status).toBe(404);
  });

  it("only the owner edits or deletes a team bot; a member's patch is a 403 and changes nothing", async () => {
    const { botId } = await teamBot();
    for (const [as, method, body] of [
      [member, "PATCH", { instructions: "Obey mia." }],
      [admin, "PATCH", { teamId: null }],
      [member, "DELETE", undefined],
    ] as const) {
      const answer = await call(as, method, `/v1/bots/${botId}`, body);
      expect(answer.status).toBe(403);
      expect(answer.body.error?.message).toContain("only the bot's owner");
    }
    expect((await store.getBot(botId))?.instructions).toBe("Keep the lights on.");
    // Routes that manage a bot (its secrets, memory, policy) stay the owner's (API1: 404).
    expect((await call(member, "GET", `/v1/bots/${botId}/memory`)).status).toBe(404);
    expect((await call(member, "GET", `/v1/bots/${botId}/secrets`)).status).toBe(404);
  });

  it("TROLE3: publishing needs owner or admin of a team one belongs to; null unpublishes", async () => {
    const { id, otherId } = await team();
    const memberBot = await call<Api.Bot>(member, "POST", "/v1/bots", { name: "m" });
    const asMember = await call(member, "PATCH", `/v1/bots/${memberBot.body.id}`, { teamId: id });
    expect(asMember.status).toBe(403);
    expect(asMember.body.error?.message).toContain("owners and admins");
    expect((await call(member, "POST", "/v1/bots", { name: "m2", teamId: id })).status).toBe(403);
    expect((await call(owner, "POST", "/v1/bots", { name: "x", teamId: otherId })).status).toBe(
      404,
    );
    expect((await call(owner, "POST", "/v1/bots", { name: "x", teamId: 7 })).status).toBe(400);
    expect((await call<Api.BotList>(owner, "GET", "/v1/bots")).body.bots).toEqual([]);
    const adminBot = await call<Api.Bot>(admin, "POST", "/v1/bots", { name: "a" });
    const published = await call<Api.Bot>(admin, "PATCH", `/v1/bots/${adminBot.body.id}`, {
      teamId: id,
    });
    expect(published.body.teamId).toBe(id);
    const teammates = async () =>
      (await call<Api.BotList>(member, "GET", "/v1/bots")).body.bots.filter((bot) => !bot.own);
    expect((await teammates()).map((bot) => bot.id)).toEqual([adminBot.body.id]);
    await call(admin, "PATCH", `/v1/bots/${adminBot.body.id}`, { teamId: null });
    expect(await teammates()).toEqual([]);
  });

  it("a forged author in a message body is refused; the author is the caller's token", async () => {
    const { botId } = await teamBot();
    const conversation = await call<Api.Conversation>(member, "POST", "/v1/conversations", {
      botId,
      place: "shared",
    });
    const forged = await call(
      member,
      "POST",
      `/v1/conversations/${conversation.body.id}/messages`,
      {
        text: "approve it",
        clientMessageId: "f",
        authorAccountId: owner.id,
      },
    );
    expect(forged.status).toBe(400);
    await call(admin, "POST", `/v1/conversations/${conversation.body.id}/messages`, {
      text: "hello from adam",
      clientMessageId: "a",
    });
    const messages = await store.listMessages(conversation.body.id);
    expect(messages.map((m) => [m.text, m.authorAccountId])).toEqual([
      ["hello from adam", admin.id],
    ]);
  });

  it("TACC2: a direct conversation is its starter's; a shared one is open to the bot's team", async () => {
    const { botId } = await teamBot();
    const direct = await call<Api.Conversation>(member, "POST", "/v1/conversations", { botId });
    const shared = await call<Api.Conversation>(member, "POST", "/v1/conversations", {
      botId,
      place: "shared",
    });
    expect(shared.body.place).toBe("shared");
    expect((await call(admin, "GET", `/v1/conversations/${direct.body.id}`)).status).toBe(404);
    expect((await call(owner, "GET", `/v1/conversations/${direct.body.id}/steps`)).status).toBe(
      404,
    );
    expect((await call(admin, "GET", `/v1/conversations/${shared.body.id}`)).status).toBe(200);
    expect((await call(outsider, "GET", `/v1/conversations/${shared.body.id}`)).status).toBe(404);
    // Renaming or deleting a shared conversation is its starter's.
    expect(
      (await call(admin, "PATCH", `/v1/conversations/${shared.body.id}`, { title: "x" })).status,
    ).toBe(403);
    expect((await call(admin, "DELETE", `/v1/conversations/${shared.body.id}`)).status).toBe(403);
    expect(
      (await call(member, "POST", "/v1/conversations", { botId, place: "channel" })).body.error
        ?.message,
    ).toContain('"shared"');
  });

  it("TACC3: removing a member ends their access at once, to the bot and their own conversations", async () => {
    const { id, botId } = await teamBot();
    const direct = await call<Api.Conversation>(member, "POST", "/v1/conversations", { botId });
    const shared = await call<Api.Conversation>(owner, "POST", "/v1/conversations", {
      botId,
      place: "shared",
    });
    expect(
      (await call(owner, "DELETE", `/v1/teams/${id}/members`, { accountId: member.id })).status,
    ).toBe(204);
    expect((await call<Api.BotList>(member, "GET", "/v1/bots")).body.bots).toEqual([]);
    for (const [method, path, body] of [
      ["GET", `/v1/bots/${botId}`, undefined],
      ["POST", "/v1/conversations", { botId }],
      ["GET", `/v1/conversations/${direct.body.id}`, undefined],
      ["GET", `/v1/conversations/${direct.body.id}/steps`, undefined],
      ["POST", `/v1/conversations/${direct.body.id}/messages`, { text: "x", clientMessageId: "x" }],
      ["POST", `/v1/conversations/${shared.body.id}/messages`, { text: "x", clientMessageId: "y" }],
      ["GET", `/v1/conversations/${shared.body.id}/events`, undefined],
    ] as const) {
      expect((await call(member, method, path, body)).status, `${method} ${path}`).toBe(404);
    }
    expect(await store.listMessages(direct.body.id)).toEqual([]);
    expect(kicked).toEqual([]);
    const listed = await call<Api.ConversationList>(member, "GET", "/v1/conversations");
    expect(listed.body.conversations).toEqual([]);
  });

  it("TEAM3: an owner who leaves takes their bot out of the team", async () => {
    const { id } = await team();
    const adminBot = await call<Api.Bot>(admin, "POST", "/v1/bots", { name: "a", teamId: id });
    expect((await call<Api.BotList>(member, "GET", "/v1/bots")).body.bots).toHaveLength(1);
    await call(admin, "DELETE", `/v1/teams/${id}/members`, { accountId: admin.id });
    expect((await call<Api.BotList>(member, "GET", "/v1/bots")).body.bots).toEqual([]);
    expect((await call<Api.Bot>(admin, "GET", `/v1/bots/${adminBot.body.id}`)).body.teamId).toBe(
      null,
    );
  });
});
