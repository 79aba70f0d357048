/**
 * Slack end to end (docs/slack.md): the real server process with its embedded Restate, the real
 * computers and the demo model, against a fake Slack on 127.0.0.1 that speaks Slack's wire format
 * (test/support/fake-slack.ts): signed Events API requests in, Web API calls out.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient } from "../support/api-client.ts";
import { startFakeSlack, type FakeSlack } from "../support/fake-slack.ts";
import { testComputerProvider } from "../support/provider.ts";
import { createRoostProcess, killPlatform, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

describe(`Slack end to end (${testComputerProvider} provider, demo model)`, () => {
  let dataDir: string;
  let roost: RoostProcess;
  let slack: FakeSlack;
  let owner: ReturnType<typeof apiClient>;
  let mate: ReturnType<typeof apiClient>;
  let stranger: ReturnType<typeof apiClient>;
  let botId: string;
  let eventsUrl: string;
  const channel = "C0GENERAL";
  const ownerSlack = "U0OWNER01";
  const mateSlack = "U0MATE001";
  const guestSlack = "U0GUEST01";
  let tsCounter = 1000;
  const nextTs = () => `1764590000.${String((tsCounter += 1)).padStart(6, "0")}`;

  beforeAll(async () => {
    slack = await startFakeSlack();
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-slack-"));
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_COMPUTER_PROVIDER: testComputerProvider,
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        ROOST_MEMORY_PASS: "off",
        ROOST_SLACK_INSECURE_API_URL: "1",
      },
    });
    await roost.start();
    owner = apiClient(roost.url, roost.token);
    const created = await owner.call<Api.CreatedAccount>("POST", "/v1/accounts", { name: "mia" });
    mate = apiClient(roost.url, () => created.token);
    const other = await owner.call<Api.CreatedAccount>("POST", "/v1/accounts", { name: "eve" });
    stranger = apiClient(roost.url, () => other.token);
    const team = await owner.call<Api.TeamDetail>("POST", "/v1/teams", { name: "Ops" });
    await owner.call("POST", `/v1/teams/${team.id}/members`, {
      accountId: created.account.id,
      role: "member",
    });
    const bot = await owner.call<Api.Bot>("POST", "/v1/bots", {
      name: "ops",
      instructions: "Be brief.",
      model: "demo",
      teamId: team.id,
    });
    botId = bot.id;
  }, 180_000);
  afterAll(async () => {
    await roost?.stop();
    await slack?.close();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  const linkBody = () => ({
    botToken: slack.token,
    signingSecret: slack.signingSecret,
    apiUrl: slack.apiUrl,
  });
  /** A call's status and body, also when it failed. */
  async function attempt(
    client: ReturnType<typeof apiClient>,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: string }> {
    try {
      return { status: 200, body: JSON.stringify(await client.call(method, path, body)) };
    } catch (error) {
      const match = /: (\d{3}) (.*)$/s.exec(String(error));
      if (match === null) throw error;
      return { status: Number(match[1]), body: match[2]! };
    }
  }
  const mention = (
    text: string,
    ts: string,
    user = ownerSlack,
    extra: Record<string, unknown> = {},
  ) => ({
    type: "app_mention",
    user,
    text: `<@${slack.botUserId}> ${text}`,
    ts,
    channel,
    event_ts: ts,
    ...extra,
  });
  const dm = (text: string, user: string, ts = nextTs()) => ({
    type: "message",
    channel_type: "im",
    channel: `D${user.slice(1)}`,
    user,
    text,
    ts,
    event_ts: ts,
  });
  /** The turns Slack shows in a thread (or a DM's top level): each working message and its final text. */
  function turnsIn(where: { channel: string; threadTs: string | null }) {
    return slack
      .callsOf("chat.postMessage")
      .filter(
        (call) =>
          call.args.channel === where.channel &&
          (where.threadTs === null
            ? call.args.thread_ts === undefined
            : call.args.thread_ts === where.threadTs) &&
          call.args.text === "working…",
      )
      .map((post) => {
        const workingTs = String(post.answer.ts);
        const finals = slack
          .callsOf("chat.update")
          .filter((call) => call.args.ts === workingTs && !call.args.text!.startsWith("working…"));
        return { post, workingTs, finals, final: finals[0]?.args.text };
      });
  }
  const nthReply = (where: { channel: string; threadTs: string | null }, n: number) =>
    waitFor(() => turnsIn(where)[n]?.final, {
      timeoutMs: 150_000,
      what: `reply ${n} in ${JSON.stringify(where)}`,
    });
  /** The token of the sign-in link the bot posted to `user` (in their DM, or ephemeral). */
  const linkTokenFor = (user: string) =>
    waitFor(
      () => {
        const posted = [
          ...slack.callsOf("chat.postMessage"),
          ...slack.callsOf("chat.postEphemeral"),
        ]
          .filter((call) => call.args.channel === `D${user.slice(1)}` || call.args.user === user)
          .map((call) => /(rsl_[A-Za-z0-9_-]{43})/.exec(call.args.text ?? "")?.[1])
          .filter((token) => token !== undefined);
        return posted.at(-1);
      },
      { what: `a sign-in link for ${user}` },
    );
  const dmText = (user: string, pattern: RegExp) =>
    waitFor(
      () =>
        slack
          .callsOf("chat.postMessage")
          .filter(
            (call) =>
              call.args.channel === `D${user.slice(1)}` && pattern.test(call.args.text ?? ""),
          )
          .at(-1)?.args.text,
      { what: `a DM to ${user} matching ${pattern}` },
    );
  /** Links `user` in Slack to `client`'s account the way a person does (link, open, confirm). */
  async function linkPerson(user: string, client: ReturnType<typeof apiClient>) {
    expect((await slack.sendEvent(eventsUrl, dm("link", user))).status).toBe(200);
    const token = await linkTokenFor(user);
    const opened = await client.call<Api.SlackPersonOpened>("POST", "/v1/slack/people", { token });
    expect(opened.slackUserId).toBe(user);
    expect((await slack.sendEvent(eventsUrl, dm(`confirm ${opened.code}`, user))).status).toBe(200);
    await dmText(user, /^Linked: /);
    return { token, code: opened.code };
  }

  it("links a bot: auth.test checks the token, the secrets are sealed and never shown, only the owner may", async () => {
    const path = `/v1/bots/${botId}/slack`;
    // A token Slack refuses is a 400 that says so, and stores nothing.
    const refused = await attempt(owner, "PUT", path, {
      ...linkBody(),
      botToken: "xoxb-not-the-token",
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toContain("invalid_auth");
    expect((await attempt(owner, "GET", path)).status).toBe(404);
    // Bad input says how to fix it.
    const badSecret = await attempt(owner, "PUT", path, {
      ...linkBody(),
      signingSecret: "not hex!",
    });
    expect(badSecret.status).toBe(400);
    expect(badSecret.body).toContain("Signing Secret");
    const badUrl = await attempt(owner, "PUT", path, {
      ...linkBody(),
      apiUrl: "http://user:pw@127.0.0.1:1/api/",
    });
    expect(badUrl.status).toBe(400);
    expect(badUrl.body).toContain("apiUrl");
    const extra = await attempt(owner, "PUT", path, { ...linkBody(), teamId: "T0EVIL" });
    expect(extra.status).toBe(400);
    // Another account: 404, like a bot that does not exist; a teammate of the team bot: 403.
    expect((await attempt(stranger, "PUT", path, linkBody())).status).toBe(404);
    expect((await attempt(stranger, "GET", path)).status).toBe(404);
    expect((await attempt(stranger, "DELETE", path)).status).toBe(404);
    const teammate = await attempt(mate, "PUT", path, linkBody());
    expect(teammate.status).toBe(403);
    expect(teammate.body).toContain("owner");
    expect((await attempt(mate, "GET", path)).status).toBe(403);

    const linked = await owner.call<Api.SlackLinked>("PUT", path, linkBody());
    expect(linked.eventsUrl).toBe(`${roost.url}/v1/slack/${botId}/events`);
    expect(linked.interactionsUrl).toBe(`${roost.url}/v1/slack/${botId}/interactions`);
    eventsUrl = linked.eventsUrl;
    const status = await owner.call<Api.SlackLinkStatus>("GET", path);
    expect(status).toMatchObject({
      state: "ok",
      workspace: { id: slack.teamId, name: "Fake Co" },
      botUserId: slack.botUserId,
    });
    for (const shown of [JSON.stringify(linked), JSON.stringify(status), roost.output()]) {
      expect(shown).not.toContain(slack.token);
      expect(shown).not.toContain(slack.signingSecret);
    }
  });

  it("answers Slack's url_verification challenge, and 401 to a bad, stale or missing signature", async () => {
    const body = JSON.stringify({ token: "x", challenge: "chal-123", type: "url_verification" });
    const ok = await fetch(eventsUrl, {
      method: "POST",
      headers: { "content-type": "application/json", ...slack.sign(body) },
      body,
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ challenge: "chal-123" });

    const before = slack.calls.length;
    const forged = await slack.sendEvent(eventsUrl, mention("$ echo forged", nextTs()), {
      secret: "00".repeat(16),
    });
    expect(forged.status).toBe(401);
    expect(forged.body).toContain("signing secret");
    const stale = await slack.sendEvent(eventsUrl, mention("$ echo stale", nextTs()), {
      timestampSec: Math.floor(Date.now() / 1000) - 600,
    });
    expect(stale.status).toBe(401);
    const future = await slack.sendEvent(eventsUrl, mention("$ echo future", nextTs()), {
      timestampSec: Math.floor(Date.now() / 1000) + 600,
    });
    expect(future.status).toBe(401);
    const unsigned = await fetch(eventsUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(unsigned.status).toBe(401);
    // Another bot's URL with this app's signature: that bot has no link, so nothing matches.
    const elsewhere = await slack.sendEvent(
      `${roost.url}/v1/slack/bot_nope/events`,
      mention("hi", nextTs()),
    );
    expect(elsewhere.status).toBe(401);
    const interaction = await fetch(`${roost.url}/v1/slack/${botId}/interactions`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        ...slack.sign("payload=x", undefined, "ab".repeat(16)),
      },
      body: "payload=x",
    });
    expect(interaction.status).toBe(401);
    // None of those reached a conversation.
    const conversations = await owner.call<Api.ConversationList>(
      "GET",
      `/v1/conversations?botId=${botId}`,
    );
    expect(conversations.conversations).toEqual([]);
    expect(slack.calls.slice(before).filter((call) => call.method === "chat.postMessage")).toEqual(
      [],
    );
  });

  it("a mention is answered in its thread, working… first and then the reply; a retried event is answered once", async () => {
    const ts = nextTs();
    const first = await slack.sendEvent(eventsUrl, mention("$ echo hello-from-slack", ts));
    expect(first.status).toBe(200);
    expect(first.elapsedMs).toBeLessThan(3000);
    // Slack retries the same event (same event_id, x-slack-retry-num), and sends its message event too.
    const retried = await slack.sendEvent(eventsUrl, mention("$ echo hello-from-slack", ts), {
      eventId: first.eventId,
      retryNum: 1,
    });
    expect(retried.status).toBe(200);
    const twin = await slack.sendEvent(eventsUrl, {
      ...mention("$ echo hello-from-slack", ts),
      type: "message",
      channel_type: "channel",
    });
    expect(twin.status).toBe(200);
    const where = { channel, threadTs: ts };
    expect(await nthReply(where, 0)).toContain("hello-from-slack");
    // Once: one working message, one final update, one Roost message in one shared conversation.
    const conversations = await owner.call<Api.ConversationList>(
      "GET",
      `/v1/conversations?botId=${botId}`,
    );
    expect(conversations.conversations).toHaveLength(1);
    const thread = conversations.conversations[0]!;
    expect(thread.place).toBe("shared");
    await waitFor(async () => (await owner.steps(thread.id)).some((step) => step.kind === "reply"));
    const messages = (await owner.steps(thread.id)).filter((step) => step.kind === "message");
    expect(messages.map((step) => step.payload.text)).toEqual(["$ echo hello-from-slack"]); // mention stripped
    expect(turnsIn(where)).toHaveLength(1);
    expect(turnsIn(where)[0]!.finals).toHaveLength(1);

    // A reply in that thread, without a mention, is the thread's next turn in the same conversation.
    const reply = await slack.sendEvent(eventsUrl, {
      type: "message",
      channel_type: "channel",
      channel,
      user: ownerSlack,
      text: "$ echo second-in-thread",
      ts: nextTs(),
      thread_ts: ts,
    });
    expect(reply.status).toBe(200);
    expect(await nthReply(where, 1)).toContain("second-in-thread");
    // A thread the bot is not in stays the people's own.
    await slack.sendEvent(eventsUrl, {
      type: "message",
      channel_type: "channel",
      channel,
      user: ownerSlack,
      text: "$ echo not-for-the-bot",
      ts: nextTs(),
      thread_ts: "1700000000.000001",
    });
    const after = await owner.call<Api.ConversationList>("GET", `/v1/conversations?botId=${botId}`);
    expect(after.conversations).toHaveLength(1);
  }, 300_000);

  it("links Slack people by a sign-in link and a code only they can send; a stranger's link opened by a victim links nothing", async () => {
    // The guest asks for a link and gets a victim (mia) to open it: mia is shown the code, the
    // guest is not, and no code the guest can send links anything.
    await slack.sendEvent(eventsUrl, dm("link", guestSlack));
    const guestToken = await linkTokenFor(guestSlack);
    const opened = await mate.call<Api.SlackPersonOpened>("POST", "/v1/slack/people", {
      token: guestToken,
    });
    expect(opened.next).toContain(`confirm ${opened.code}`);
    await slack.sendEvent(eventsUrl, dm("confirm ABCDEFGHJK", guestSlack));
    expect(await dmText(guestSlack, /does not match/)).toContain("send `link`");
    // The code from someone else's Slack account does not work either.
    await slack.sendEvent(eventsUrl, dm(`confirm ${opened.code}`, mateSlack));
    expect(await dmText(mateSlack, /does not match/)).toBeDefined();
    // A link opens once, and bad input is a 400 that says what to send.
    expect(
      (await attempt(stranger, "POST", "/v1/slack/people", { token: guestToken })).status,
    ).toBe(404);
    const bad = await attempt(stranger, "POST", "/v1/slack/people", { token: "nope" });
    expect(bad.status).toBe(400);
    expect(bad.body).toContain("rsl_");

    await linkPerson(ownerSlack, owner);
    await linkPerson(mateSlack, mate);
  }, 120_000);

  // printenv, not $NAME: naming a teammate's secret in a shared place asks for consent (CONS1).
  const probe = (tag: string) =>
    `$ cat /workspace/who 2>/dev/null || echo absent; echo ${tag} > /workspace/who`;

  it("routes row by row: the owner's DM, a teammate's DM and a channel each run on their own computer; an unlinked person uses the shared one", async () => {
    const ownerDm = { channel: `D${ownerSlack.slice(1)}`, threadTs: null };
    const mateDm = { channel: `D${mateSlack.slice(1)}`, threadTs: null };
    const guestDm = { channel: `D${guestSlack.slice(1)}`, threadTs: null };
    const threadTs = nextTs();
    const thread = { channel, threadTs };
    const ownerTurns = turnsIn(ownerDm).length;
    const mateTurns = turnsIn(mateDm).length;

    await slack.sendEvent(eventsUrl, dm(probe("owner"), ownerSlack));
    expect(await nthReply(ownerDm, ownerTurns)).toContain("absent");
    await slack.sendEvent(eventsUrl, dm(probe("mate"), mateSlack));
    expect(await nthReply(mateDm, mateTurns)).toContain("absent");
    await slack.sendEvent(eventsUrl, mention(probe("shared"), threadTs, mateSlack));
    expect(await nthReply(thread, 0)).toContain("absent");
    // Each computer kept its own file; the unlinked guest's DM is on the shared computer.
    await slack.sendEvent(eventsUrl, dm("$ cat /workspace/who", ownerSlack));
    expect(await nthReply(ownerDm, ownerTurns + 1)).toContain("owner");
    await slack.sendEvent(eventsUrl, dm("$ cat /workspace/who", mateSlack));
    expect(await nthReply(mateDm, mateTurns + 1)).toContain("mate");
    await slack.sendEvent(eventsUrl, dm("$ cat /workspace/who", guestSlack));
    expect(await nthReply(guestDm, 0)).toContain("shared");

    // The conversations say so: the teammate's DM is their own direct chat; the thread is shared.
    const mine = await mate.call<Api.ConversationList>("GET", `/v1/conversations?botId=${botId}`);
    expect(
      mine.conversations.find((c) => c.title === `Slack DM with Person ${mateSlack}`)?.place,
    ).toBe("direct");
    const ownerList = await owner.call<Api.ConversationList>(
      "GET",
      `/v1/conversations?botId=${botId}`,
    );
    expect(
      ownerList.conversations.find((c) => c.title === `Slack DM with Person ${ownerSlack}`)?.place,
    ).toBe("direct");
    expect(
      ownerList.conversations.find((c) => c.title === `Slack DM with Person ${guestSlack}`)?.place,
    ).toBe("shared");
    // The owner cannot read the teammate's own chat.
    expect(
      ownerList.conversations.find((c) => c.title === `Slack DM with Person ${mateSlack}`),
    ).toBeUndefined();
  }, 600_000);

  /** The newest card (a message with buttons) posted in `where`. */
  const cardIn = (where: { channel: string; threadTs: string | null }, after: number) =>
    waitFor(
      () =>
        slack
          .callsOf("chat.postMessage")
          .slice(after)
          .find(
            (call) =>
              call.args.channel === where.channel &&
              call.args.blocks !== undefined &&
              (where.threadTs === null
                ? call.args.thread_ts === undefined
                : call.args.thread_ts === where.threadTs),
          ),
      { timeoutMs: 120_000, what: `a card in ${JSON.stringify(where)}` },
    );
  const ephemeralTo = (user: string, after: number) =>
    waitFor(
      () =>
        slack
          .callsOf("chat.postEphemeral")
          .slice(after)
          .find((call) => call.args.user === user)?.args.text,
      { what: `an ephemeral to ${user}` },
    );
  const interactionsUrl = () => `${roost.url}/v1/slack/${botId}/interactions`;

  it("an approval in a teammate's DM is a card for the teammate: a stranger's click gets an ephemeral, theirs decides", async () => {
    const mateDm = { channel: `D${mateSlack.slice(1)}`, threadTs: null };
    const posts = slack.callsOf("chat.postMessage").length;
    const turns = turnsIn(mateDm).length;
    await slack.sendEvent(eventsUrl, dm("$ rm -rf ~/old-notes", mateSlack));
    const card = await cardIn(mateDm, posts);
    expect(card.args.text).toContain(`For <@${mateSlack}>`);
    const pending = await mate.call<Api.ApprovalList>("GET", "/v1/approvals?state=pending");
    expect(pending.approvals).toHaveLength(1);
    // The bot's owner and an unlinked person are not the credential owner: ephemerals, nothing decided.
    let ephemerals = slack.callsOf("chat.postEphemeral").length;
    expect(
      (await slack.click(interactionsUrl(), { user: ownerSlack, card, actionId: "roost_approve" }))
        .status,
    ).toBe(200);
    expect(await ephemeralTo(ownerSlack, ephemerals)).toContain(`This is for <@${mateSlack}>`);
    ephemerals = slack.callsOf("chat.postEphemeral").length;
    await slack.click(interactionsUrl(), { user: guestSlack, card, actionId: "roost_approve" });
    expect(await ephemeralTo(guestSlack, ephemerals)).toContain("not linked");
    expect(
      (await mate.call<Api.ApprovalList>("GET", "/v1/approvals?state=pending")).approvals,
    ).toHaveLength(1);
    // A forged click (bad signature) is refused.
    const forged = await fetch(interactionsUrl(), {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        ...slack.sign("payload={}", undefined, "cd".repeat(16)),
      },
      body: "payload={}",
    });
    expect(forged.status).toBe(401);
    // The teammate's click answers it as the teammate.
    await slack.click(interactionsUrl(), { user: mateSlack, card, actionId: "roost_deny" });
    const decided = await waitFor(async () => {
      const list = await mate.call<Api.ApprovalList>("GET", "/v1/approvals?state=denied");
      return list.approvals.find((approval) => approval.id === pending.approvals[0]!.id);
    });
    expect(decided.decidedBy).toBe((await mate.call<{ id: string }>("GET", "/v1/me")).id);
    expect(await nthReply(mateDm, turns)).toBeDefined();
    const updated = await waitFor(() =>
      slack.callsOf("chat.update").find((call) => call.args.ts === card.answer.ts),
    );
    expect(updated.args.text).toContain(`Denied by <@${mateSlack}>`);
  }, 240_000);

  it("a consent card blocks a teammate's secret in a channel until they accept", async () => {
    await mate.call("PUT", "/v1/me/secrets/MATE_TOKEN", { value: `mt-${Date.now()}` });
    const threadTs = nextTs();
    const thread = { channel, threadTs };
    const posts = slack.callsOf("chat.postMessage").length;
    await slack.sendEvent(eventsUrl, mention("$ echo ${MATE_TOKEN} | wc -c", threadTs, mateSlack));
    const card = await cardIn(thread, posts);
    expect(card.args.text).toContain("consent");
    expect(card.args.text).toContain(`For <@${mateSlack}>`);
    const list = await owner.call<Api.ConversationList>("GET", `/v1/conversations?botId=${botId}`);
    const conversation = list.conversations.find(
      (c) => c.title === `Slack thread in ${channel}` && c.place === "shared" && c.id !== undefined,
    );
    expect(conversation).toBeDefined();
    // The bot's owner cannot lend the teammate's secret.
    const ephemerals = slack.callsOf("chat.postEphemeral").length;
    await slack.click(interactionsUrl(), { user: ownerSlack, card, actionId: "roost_approve" });
    expect(await ephemeralTo(ownerSlack, ephemerals)).toContain(`This is for <@${mateSlack}>`);
    expect(turnsIn(thread)[0]?.final).toBeUndefined();
    // Until the teammate accepts, nothing ran.
    await slack.click(interactionsUrl(), { user: mateSlack, card, actionId: "roost_approve" });
    const reply = await nthReply(thread, 0);
    expect(reply).not.toContain("MATE_TOKEN=");
    expect(reply).toMatch(/\d+/);
  }, 240_000);

  it("a draft in a person's own DM is a card with Send and Discard for them only", async () => {
    const ownerDm = { channel: `D${ownerSlack.slice(1)}`, threadTs: null };
    const posts = slack.callsOf("chat.postMessage").length;
    await slack.sendEvent(eventsUrl, dm("draft message bob: the report is late", ownerSlack));
    const card = await cardIn(ownerDm, posts);
    expect(card.args.text).toContain("Draft message to bob");
    expect(card.args.text).toContain(`For <@${ownerSlack}>`);
    const [draft] = (await owner.call<{ drafts: Api.Draft[] }>("GET", "/v1/drafts?status=pending"))
      .drafts;
    expect(draft?.to).toBe("bob");
    // Someone else's click: an ephemeral, and the draft still waits.
    const ephemerals = slack.callsOf("chat.postEphemeral").length;
    await slack.click(interactionsUrl(), {
      user: mateSlack,
      card,
      actionId: "roost_draft_discard",
    });
    expect(await ephemeralTo(mateSlack, ephemerals)).toContain(`This is for <@${ownerSlack}>`);
    expect((await owner.call<Api.Draft>("GET", `/v1/drafts/${draft!.id}`)).status).toBe("pending");
    // The owner's Discard discards it, and the card says so.
    await slack.click(interactionsUrl(), {
      user: ownerSlack,
      card,
      actionId: "roost_draft_discard",
    });
    await waitFor(
      async () =>
        (await owner.call<Api.Draft>("GET", `/v1/drafts/${draft!.id}`)).status === "discarded",
    );
    const updated = await waitFor(() =>
      slack.callsOf("chat.update").find((call) => call.args.ts === card.answer.ts),
    );
    expect(updated.args.text).toContain(`Discarded by <@${ownerSlack}>`);

    // Send goes through the results' sender: with no channel configured it fails, saying so.
    const later = slack.callsOf("chat.postMessage").length;
    await slack.sendEvent(eventsUrl, dm("draft message carol: see you", ownerSlack));
    const second = await cardIn(ownerDm, later);
    await slack.click(interactionsUrl(), {
      user: ownerSlack,
      card: second,
      actionId: "roost_draft_send",
    });
    const sent = await waitFor(() =>
      slack.callsOf("chat.update").find((call) => call.args.ts === second.answer.ts),
    );
    expect(sent.args.text).toMatch(new RegExp(`^(Sent|Not sent: .+) by <@${ownerSlack}>`));
    const after = (await owner.call<{ drafts: Api.Draft[] }>("GET", "/v1/drafts")).drafts.find(
      (d) => d.to === "carol",
    );
    expect(after?.status).not.toBe("pending");
  }, 180_000);

  it("a long reply goes up as a file in the thread (files.uploadV2)", async () => {
    const threadTs = nextTs();
    await slack.sendEvent(eventsUrl, mention("$ seq 1 3000", threadTs));
    const shown = await nthReply({ channel, threadTs }, 0);
    expect(shown).toContain("the whole reply is attached");
    const complete = await waitFor(
      () =>
        slack
          .callsOf("files.completeUploadExternal")
          .find((call) => call.args.thread_ts === threadTs),
      { what: "the file upload to complete" },
    );
    expect(complete.args.channel_id).toBe(channel);
    const [file] = JSON.parse(complete.args.files!) as { id: string }[];
    expect(slack.uploads.get(file!.id)).toContain("2999");
  }, 180_000);

  it("an emoji reaction is a result: the react tool reacts to the Slack message the turn answers", async () => {
    const threadTs = nextTs();
    await slack.sendEvent(eventsUrl, mention('call react {"emoji":"eyes"}', threadTs));
    const reaction = await waitFor(
      () => slack.callsOf("reactions.add").find((call) => call.args.timestamp === threadTs),
      { timeoutMs: 120_000, what: "a reaction" },
    );
    expect(reaction.args).toMatchObject({ channel, name: "eyes" });
    await nthReply({ channel, threadTs }, 0);
    // Outside Slack the tool is not offered.
    const chat = await owner.createConversation(botId);
    await owner.send(chat.id, 'call react {"emoji":"eyes"}');
    const steps = await owner.waitForSteps(chat.id, "reply", 1, 120_000);
    expect(steps.some((step) => step.kind === "tool")).toBe(false);
    expect(slack.callsOf("reactions.add")).toHaveLength(1);
  }, 240_000);

  it("listener routines hear Slack messages: a phrase case-insensitively, or new top-level messages; only after saving, once", async () => {
    const badPhrase = await attempt(owner, "POST", `/v1/bots/${botId}/routines`, {
      name: "x",
      instruction: "x",
      trigger: { type: "slack", phrase: " " },
    });
    expect(badPhrase.status).toBe(400);
    expect(badPhrase.body).toContain("phrase");
    const phrase = await owner.call<{ id: string }>("POST", `/v1/bots/${botId}/routines`, {
      name: "deploys",
      instruction: "Say what failed.",
      trigger: { type: "slack", phrase: "Deploy Failed" },
    });
    const everything = await owner.call<{ id: string }>("POST", `/v1/bots/${botId}/routines`, {
      name: "all new messages",
      instruction: "Note it.",
      trigger: { type: "slack" },
    });
    let sub = 0;
    const nowTs = () =>
      `${Math.floor(Date.now() / 1000) + 1}.${String((sub += 1)).padStart(6, "0")}`;
    const said = (text: string, ts: string, threadTs?: string) => ({
      type: "message",
      channel_type: "channel",
      channel: "C0OPS",
      user: mateSlack,
      text,
      ts,
      ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
    });
    const top = nowTs();
    const first = await slack.sendEvent(eventsUrl, said("the deploy FAILED again", top));
    expect(first.status).toBe(200);
    await slack.sendEvent(eventsUrl, said("the deploy FAILED again", top), {
      eventId: first.eventId,
      retryNum: 1,
    });
    await slack.sendEvent(eventsUrl, said("deploy failed in a thread", nowTs(), top));
    await slack.sendEvent(eventsUrl, said("a reply without it", nowTs(), top));
    // Sent before the routines were saved: heard by neither.
    await slack.sendEvent(eventsUrl, said("deploy failed long ago", nextTs()));
    const runsOf = (id: string) =>
      owner
        .call<{ runs: Api.RoutineRun[] }>("GET", `/v1/routines/${id}/runs`)
        .then((list) => list.runs);
    await waitFor(
      async () =>
        (await runsOf(phrase.id)).length >= 2 && (await runsOf(everything.id)).length >= 1,
      {
        timeoutMs: 60_000,
        what: "the listener runs",
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await runsOf(phrase.id)).toHaveLength(2);
    const [heard] = await runsOf(everything.id);
    expect(await runsOf(everything.id)).toHaveLength(1);
    // The message reaches the run as untrusted outside content.
    const conversationId = await waitFor(
      async () => (await runsOf(everything.id))[0]?.conversationId ?? undefined,
    );
    const messages = (await owner.steps(conversationId)).filter((step) => step.kind === "message");
    expect(String(messages[0]?.payload.text)).toContain("the deploy FAILED again");
    expect(String(messages[0]?.payload.text)).toContain("untrusted");
    expect(heard?.kind).toBe("webhook");
    for (const id of [phrase.id, everything.id])
      await owner.call("DELETE", `/v1/routines/${id}`).catch(() => undefined);
  }, 180_000);

  it("Socket Mode: an event over the app-level WebSocket is acknowledged once stored, and answered in its thread once", async () => {
    const socketBot = await owner.call<Api.Bot>("POST", "/v1/bots", {
      name: "socket",
      model: "demo",
    });
    const path = `/v1/bots/${socketBot.id}/slack`;
    const bad = await attempt(owner, "PUT", path, { ...linkBody(), appToken: slack.token });
    expect(bad.status).toBe(400);
    expect(bad.body).toContain("xapp-");
    const linked = await owner.call<Api.SlackLinked>("PUT", path, {
      ...linkBody(),
      appToken: slack.appToken,
    });
    expect(linked.status.socketMode).toBe(true);
    expect(JSON.stringify(linked)).not.toContain(slack.appToken);
    await slack.socketConnected();
    const ts = nextTs();
    const where = { channel: "C0SOCKET", threadTs: ts };
    const event = mention("hello over-socket", ts, ownerSlack, { channel: "C0SOCKET" });
    const sent = await slack.socketEvent(event);
    expect(sent.ackMs).toBeLessThan(3000);
    // Slack sends an envelope again when it thinks the ack was lost.
    await slack.socketEvent(event, { envelopeId: sent.envelopeId, retryAttempt: 1 });
    expect(await nthReply(where, 0)).toContain("hello over-socket");
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(turnsIn(where)).toHaveLength(1);
    expect(turnsIn(where)[0]!.finals).toHaveLength(1);
    await owner.call("DELETE", path).catch(() => undefined);
  }, 180_000);

  it("Slack errors show on the link and in the log once; a rate limit is retried after retry-after", async () => {
    const path = `/v1/bots/${botId}/slack`;
    slack.revoke(true);
    const first = nextTs();
    await slack.sendEvent(eventsUrl, mention("$ echo while-revoked", first));
    const broken = await waitFor(
      async () => {
        const status = await owner.call<Api.SlackLinkStatus>("GET", path);
        return status.state === "error" ? status : undefined;
      },
      { timeoutMs: 120_000, what: "the link to show the error" },
    );
    expect(broken.lastError?.message).toContain("token_revoked");
    expect(broken.lastError?.message).toContain("reinstall");
    await slack.sendEvent(eventsUrl, mention("$ echo still-revoked", nextTs()));
    // The turns ran in Roost; the error was logged once, not per call.
    await waitFor(async () => {
      const list = await owner.call<Api.ConversationList>(
        "GET",
        `/v1/conversations?botId=${botId}`,
      );
      const last = list.conversations.find((c) => c.title === `Slack thread in ${channel}`);
      return last !== undefined;
    });
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(roost.output().split("slack call failed").length - 1).toBe(1);

    slack.revoke(false);
    slack.failNext("chat.update", { rateLimitedSeconds: 1 });
    const threadTs = nextTs();
    await slack.sendEvent(eventsUrl, mention("$ echo after-rate-limit", threadTs));
    expect(await nthReply({ channel, threadTs }, 0)).toContain("after-rate-limit");
    const healed = await owner.call<Api.SlackLinkStatus>("GET", path);
    expect(healed.state).toBe("ok");
    expect(roost.output()).toContain("ratelimited");

    // SLK29: another workspace's uninstall (the signing secret is the app's) changes nothing here;
    // this workspace's shows on the link at once, saying what to do.
    const elsewhere = await slack.sendEvent(
      eventsUrl,
      { type: "app_uninstalled" },
      { teamId: "T0OTHER99" },
    );
    expect(elsewhere.status).toBe(200);
    expect((await owner.call<Api.SlackLinkStatus>("GET", path)).state).toBe("ok");
    expect((await slack.sendEvent(eventsUrl, { type: "app_uninstalled" })).status).toBe(200);
    const uninstalled = await owner.call<Api.SlackLinkStatus>("GET", path);
    expect(uninstalled.state).toBe("error");
    expect(uninstalled.lastError?.message).toMatch(/uninstalled from the workspace\. Reinstall it/);
    // A call that succeeds again (a relink; this fake still takes the old token) clears it.
    const again = nextTs();
    await slack.sendEvent(eventsUrl, mention("$ echo after-uninstall", again));
    expect(await nthReply({ channel, threadTs: again }, 0)).toContain("after-uninstall");
    expect((await owner.call<Api.SlackLinkStatus>("GET", path)).state).toBe("ok");
  }, 300_000);

  it("kill -9 between the event's 200 and the reply: the reply is still posted, once", async () => {
    const threadTs = nextTs();
    const answered = await slack.sendEvent(
      eventsUrl,
      mention("$ sleep 2; echo survived-kill", threadTs),
    );
    expect(answered.status).toBe(200);
    await killPlatform(roost);
    // Killed before the reply: the command was still sleeping.
    expect(turnsIn({ channel, threadTs }).filter((turn) => turn.final !== undefined)).toEqual([]);
    await roost.start();
    const where = { channel, threadTs };
    expect(await nthReply(where, 0)).toContain("survived-kill");
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const turns = turnsIn(where);
    expect(turns).toHaveLength(1);
    expect(turns[0]!.finals).toHaveLength(1);
  }, 300_000);
  it("a flood of Slack requests is cut at 1200 a minute per bot, before any work", async () => {
    const url = `${roost.url}/v1/slack/bot_flood/events`;
    const statuses: number[] = [];
    const started = Date.now();
    for (let batch = 0; batch < 30; batch++)
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: 50 }, () =>
            fetch(url, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: "{}",
            }).then((response) => response.status),
          ),
        )),
      );
    // The bucket holds 1200 and refills 20 a second while the flood runs.
    const refilled = Math.ceil(((Date.now() - started) / 1000) * 20) + 1;
    expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(1200 + refilled);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(
      1500 - 1200 - refilled,
    );
    // Another bot's URL is not cut by this one's flood.
    expect(
      (await slack.sendEvent(eventsUrl, mention("hello after the flood", nextTs()))).status,
    ).toBe(200);
  }, 120_000);
});
