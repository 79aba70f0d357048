/**
 * Slack OAuth install for many workspaces end to end (docs/slack.md "Many workspaces"): the real
 * server process with its embedded Restate and the demo model, against the fake Slack on
 * 127.0.0.1 (its /oauth/v2/authorize page and oauth.v2.access, test/support/fake-slack.ts).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient } from "../support/api-client.ts";
import { startFakeSlack, type FakeSlack } from "../support/fake-slack.ts";
import { testComputerProvider } from "../support/provider.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

describe(`Slack OAuth install, many workspaces (${testComputerProvider} provider, demo model)`, () => {
  let dataDir: string;
  let roost: RoostProcess;
  let slack: FakeSlack;
  let owner: ReturnType<typeof apiClient>;
  let strangerToken: string;
  let stranger: ReturnType<typeof apiClient>;
  let botA: string;
  let botB: string;
  let tsCounter = 2000;
  const nextTs = () => `1764590000.${String((tsCounter += 1)).padStart(6, "0")}`;

  beforeAll(async () => {
    slack = await startFakeSlack();
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-slack-oauth-"));
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
    const other = await owner.call<Api.CreatedAccount>("POST", "/v1/accounts", { name: "eve" });
    strangerToken = other.token;
    stranger = apiClient(roost.url, () => strangerToken);
    const make = (name: string) =>
      owner.call<Api.Bot>("POST", "/v1/bots", { name, instructions: "Be brief.", model: "demo" });
    botA = (await make("alpha")).id;
    botB = (await make("beta")).id;
  }, 180_000);
  afterAll(async () => {
    await roost?.stop();
    await slack?.close();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  const oauthBody = () => ({
    clientId: slack.clientId,
    clientSecret: slack.clientSecret,
    signingSecret: slack.signingSecret,
    apiUrl: slack.apiUrl,
  });
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
  /** GET /v1/slack/{bot}/install as `token`'s account, without following the redirect. */
  const startInstall = (botId: string, token = roost.token()) =>
    fetch(`${roost.url}/v1/slack/${botId}/install`, {
      headers: { authorization: `Bearer ${token}` },
      redirect: "manual",
    });
  /** The person approves the install in workspace `team`: Slack's redirect back to Roost. */
  async function approve(botId: string, team: string): Promise<URL> {
    const started = await startInstall(botId);
    expect(started.status).toBe(302);
    const authorize = new URL(started.headers.get("location")!);
    expect(authorize.origin).toBe(new URL(slack.apiUrl).origin);
    expect(authorize.pathname).toBe("/oauth/v2/authorize");
    expect(authorize.searchParams.get("client_id")).toBe(slack.clientId);
    expect(authorize.searchParams.get("scope")?.split(",")).toContain("app_mentions:read");
    expect(authorize.searchParams.get("state")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    authorize.searchParams.set("team", team);
    const approved = await fetch(authorize, { redirect: "manual" });
    expect(approved.status).toBe(302);
    const callback = new URL(approved.headers.get("location")!);
    expect(`${callback.origin}${callback.pathname}`).toBe(
      `${roost.url}/v1/slack/${botId}/oauth/callback`,
    );
    return callback;
  }
  const installs = async (botId: string) =>
    (
      await owner.call<{ workspaces: Api.SlackInstalledWorkspace[] }>(
        "GET",
        `/v1/bots/${botId}/slack/installs`,
      )
    ).workspaces;
  /** DELETE of one workspace's install as `token`'s account: its status. */
  const uninstall = async (botId: string, team: string, token = roost.token()) =>
    (
      await fetch(`${roost.url}/v1/bots/${botId}/slack/installs/${team}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${token}` },
      })
    ).status;
  const exchanges = () => slack.callsOf("oauth.v2.access").length;

  it("links a bot for OAuth install: bad input says how to fix it; the client secret never comes out", async () => {
    const path = `/v1/bots/${botA}/slack`;
    const both = await attempt(owner, "PUT", path, { ...oauthBody(), botToken: slack.token });
    expect(both.status).toBe(400);
    expect(both.body).toContain("either botToken");
    const half = await attempt(owner, "PUT", path, { ...oauthBody(), clientSecret: undefined });
    expect(half.status).toBe(400);
    const badId = await attempt(owner, "PUT", path, { ...oauthBody(), clientId: "abc" });
    expect(badId.status).toBe(400);
    expect(badId.body).toContain("Client ID");
    expect((await attempt(owner, "GET", path)).status).toBe(404);

    const linked = await owner.call<Api.SlackLinked>("PUT", path, oauthBody());
    expect(linked.eventsUrl).toBe(`${roost.url}/v1/slack/${botA}/events`);
    expect(linked.status.oauth).toEqual({
      clientId: slack.clientId,
      installUrl: `${roost.url}/v1/slack/${botA}/install`,
      redirectUrl: `${roost.url}/v1/slack/${botA}/oauth/callback`,
      workspaces: [],
    });
    const shown = JSON.stringify(await owner.call("GET", path));
    expect(shown).not.toContain(slack.clientSecret);
    expect(shown).not.toContain(slack.signingSecret);
    await owner.call("PUT", `/v1/bots/${botB}/slack`, oauthBody());
  });

  it("another account cannot start an install or read or remove the installs; no token starts nothing", async () => {
    const before = (await startInstall(botA, strangerToken)).status;
    expect(before).toBe(404); // SAPI1: like a missing bot
    expect(
      (await fetch(`${roost.url}/v1/slack/${botA}/install`, { redirect: "manual" })).status,
    ).toBe(401);
    expect((await attempt(stranger, "GET", `/v1/bots/${botA}/slack/installs`)).status).toBe(404);
    expect(await uninstall(botA, "T0AAAA001", strangerToken)).toBe(404);
    // Asked for JSON (the web app's button): the same refusal, and for the owner the same URL.
    const asJson = (token: string) =>
      fetch(`${roost.url}/v1/slack/${botA}/install`, {
        headers: { authorization: `Bearer ${token}`, accept: "application/json" },
        redirect: "manual",
      });
    expect((await asJson(strangerToken)).status).toBe(404);
    const own = await asJson(roost.token());
    expect(own.status).toBe(200);
    const { url } = (await own.json()) as { url: string };
    expect(new URL(url).pathname).toBe("/oauth/v2/authorize");
    expect(new URL(url).searchParams.get("state")).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("installs two workspaces; a mention in each is answered in its thread with that workspace's own token", async () => {
    for (const team of ["T0AAAA001", "T0BBBB002"]) {
      const page = await fetch(await approve(botA, team));
      expect(page.status).toBe(200);
      expect(await page.text()).toContain(`installed in the Slack workspace Workspace ${team}`);
    }
    const workspaces = await installs(botA);
    expect(workspaces.map((workspace) => workspace.id).sort()).toEqual(["T0AAAA001", "T0BBBB002"]);
    const listed =
      JSON.stringify(workspaces) +
      JSON.stringify(await owner.call("GET", `/v1/bots/${botA}/slack`));
    for (const team of ["T0AAAA001", "T0BBBB002"])
      expect(listed).not.toContain(slack.installedToken(team)!);

    const eventsUrl = `${roost.url}/v1/slack/${botA}/events`;
    // A workspace that never installed the app: acknowledged and ignored.
    const stray = await slack.sendEvent(
      eventsUrl,
      {
        type: "app_mention",
        user: "U0STRAY01",
        text: "<@UBOT0CCCC0> $ echo stray",
        ts: nextTs(),
        channel: "C0STRAY01",
      },
      { teamId: "T0CCCC003" },
    );
    expect(stray.status).toBe(200);

    const threads: { team: string; channel: string; ts: string }[] = [];
    for (const workspace of workspaces) {
      const ts = nextTs();
      const channel = `C0${workspace.id.slice(3, 7)}01`;
      const sent = await slack.sendEvent(
        eventsUrl,
        {
          type: "app_mention",
          user: "U0PERSON1",
          text: `<@${workspace.botUserId}> $ echo hello-${workspace.id}`,
          ts,
          channel,
          event_ts: ts,
        },
        { teamId: workspace.id },
      );
      expect(sent.status).toBe(200);
      threads.push({ team: workspace.id, channel, ts });
    }
    for (const thread of threads) {
      const final = await waitFor(
        () =>
          slack
            .callsOf("chat.update")
            .find(
              (call) =>
                call.args.channel === thread.channel &&
                (call.args.text ?? "").includes(`hello-${thread.team}`),
            ),
        { timeoutMs: 150_000, what: `the reply in ${thread.team}` },
      );
      const token = slack.installedToken(thread.team)!;
      expect(final.token).toBe(token);
      // Every call made in that thread carried that workspace's token, none the other's.
      const inThread = slack.calls.filter((call) => call.args.channel === thread.channel);
      expect(inThread.length).toBeGreaterThan(1);
      expect(new Set(inThread.map((call) => call.token))).toEqual(new Set([token]));
      const working = inThread.find((call) => call.method === "chat.postMessage");
      expect(working?.args.thread_ts).toBe(thread.ts);
    }
    expect(slack.calls.filter((call) => call.args.channel === "C0STRAY01")).toEqual([]);

    // Removing one workspace: its events are ignored from then on; the other's stay answered.
    expect(await uninstall(botA, "T0BBBB002")).toBe(204);
    expect((await installs(botA)).map((workspace) => workspace.id)).toEqual(["T0AAAA001"]);
    expect(await uninstall(botA, "T0BBBB002")).toBe(404);
    const removed = workspaces.find((workspace) => workspace.id === "T0BBBB002")!;
    const kept = workspaces.find((workspace) => workspace.id === "T0AAAA001")!;
    for (const [workspace, where] of [
      [removed, "C0GONE001"],
      [kept, "C0KEPT001"],
    ] as const) {
      const ts = nextTs();
      const sent = await slack.sendEvent(
        eventsUrl,
        {
          type: "app_mention",
          user: "U0PERSON1",
          text: `<@${workspace.botUserId}> $ echo after-${workspace.id}`,
          ts,
          channel: where,
          event_ts: ts,
        },
        { teamId: workspace.id },
      );
      expect(sent.status).toBe(200);
    }
    await waitFor(
      () =>
        slack
          .callsOf("chat.update")
          .find((call) => (call.args.text ?? "").includes("after-T0AAAA001")),
      { timeoutMs: 150_000, what: "the reply in the kept workspace" },
    );
    expect(slack.calls.filter((call) => call.args.channel === "C0GONE001")).toEqual([]);
  });

  it("SLK29: app_uninstalled or a revoked bot token removes that workspace's install; a revoked user token or a forged event does not", async () => {
    for (const team of ["T0DDDD004", "T0EEEE005"])
      expect((await fetch(await approve(botA, team))).status).toBe(200);
    const eventsUrl = `${roost.url}/v1/slack/${botA}/events`;
    const ids = async () => (await installs(botA)).map((workspace) => workspace.id);
    expect(await ids()).toEqual(expect.arrayContaining(["T0DDDD004", "T0EEEE005"]));
    // Signed with another secret: refused, and nothing removed.
    const forged = await slack.sendEvent(
      eventsUrl,
      { type: "app_uninstalled" },
      { teamId: "T0DDDD004", secret: "0".repeat(32) },
    );
    expect(forged.status).toBe(401);
    // Only a person's token revoked: the bot's install stays.
    const people = await slack.sendEvent(
      eventsUrl,
      { type: "tokens_revoked", tokens: { oauth: ["U0PERSON1"] } },
      { teamId: "T0EEEE005" },
    );
    expect(people.status).toBe(200);
    expect(await ids()).toEqual(expect.arrayContaining(["T0DDDD004", "T0EEEE005"]));

    const gone = await slack.sendEvent(
      eventsUrl,
      { type: "app_uninstalled" },
      { teamId: "T0DDDD004" },
    );
    expect(gone.status).toBe(200);
    const revoked = await slack.sendEvent(
      eventsUrl,
      { type: "tokens_revoked", tokens: { bot: ["UBOT0EEEE0"] } },
      { teamId: "T0EEEE005" },
    );
    expect(revoked.status).toBe(200);
    const left = await ids();
    expect(left).not.toContain("T0DDDD004");
    expect(left).not.toContain("T0EEEE005");
    // A mention from the uninstalled workspace is ignored: no Slack call is made for it.
    const after = await slack.sendEvent(
      eventsUrl,
      {
        type: "app_mention",
        user: "U0PERSON1",
        text: "$ echo ghost",
        ts: nextTs(),
        channel: "C0GHOST01",
      },
      { teamId: "T0DDDD004" },
    );
    expect(after.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(slack.calls.filter((call) => call.args.channel === "C0GHOST01")).toEqual([]);
  });

  it("a listener routine's run answers in the heard message's thread, with its workspace's token, once", async () => {
    const routine = await owner.call<{ id: string }>("POST", `/v1/bots/${botA}/routines`, {
      name: "incidents",
      instruction: "Say you saw it.",
      trigger: { type: "slack", phrase: "incident" },
    });
    const eventsUrl = `${roost.url}/v1/slack/${botA}/events`;
    const ts = `${Math.floor(Date.now() / 1000) + 1}.000777`;
    const said = {
      type: "message",
      channel_type: "channel",
      channel: "C0INCID01",
      user: "U0PERSON1",
      text: "an INCIDENT in prod",
      ts,
    };
    const first = await slack.sendEvent(eventsUrl, said, { teamId: "T0AAAA001" });
    expect(first.status).toBe(200);
    const retried = await slack.sendEvent(eventsUrl, said, {
      teamId: "T0AAAA001",
      eventId: first.eventId,
      retryNum: 1,
    });
    expect(retried.status).toBe(200);
    const answered = await waitFor(
      () =>
        slack
          .callsOf("chat.postMessage")
          .find((call) => call.args.channel === "C0INCID01" && call.args.thread_ts === ts),
      { timeoutMs: 150_000, what: "the listener run's answer in the thread" },
    );
    expect(answered.token).toBe(slack.installedToken("T0AAAA001"));
    const runs = async () =>
      (await owner.call<{ runs: Api.RoutineRun[] }>("GET", `/v1/routines/${routine.id}/runs`)).runs;
    await waitFor(async () => (await runs())[0]?.status === "replied", {
      timeoutMs: 60_000,
      what: "the run to finish",
    });
    expect(await runs()).toHaveLength(1);
    expect(
      slack.callsOf("chat.postMessage").filter((call) => call.args.channel === "C0INCID01"),
    ).toHaveLength(1);
    await owner.call("DELETE", `/v1/routines/${routine.id}`).catch(() => undefined);
  });

  it("a forged, replayed or other bot's state is a 400 that stores nothing and calls no Slack method", async () => {
    const before = await installs(botA);
    // Forged: Slack's real code with a state Roost never made.
    const forged = await approve(botA, "T0FORGE01");
    forged.searchParams.set("state", randomBytes(32).toString("base64url"));
    let exchanged = exchanges();
    const forgedPage = await fetch(forged);
    expect(forgedPage.status).toBe(400);
    expect(await forgedPage.text()).toContain("start again from the install link");
    expect(exchanges()).toBe(exchanged);

    // Replayed: a callback that worked once does nothing the second time.
    const good = await approve(botA, "T0REPLAY1");
    expect((await fetch(good)).status).toBe(200);
    exchanged = exchanges();
    const replayed = await fetch(good);
    expect(replayed.status).toBe(400);
    expect(exchanges()).toBe(exchanged);
    expect(await uninstall(botA, "T0REPLAY1")).toBe(204);

    // Bot B's state at bot A's callback: refused, nothing stored for either.
    const ofB = await approve(botB, "T0CROSS01");
    const atA = new URL(`${roost.url}/v1/slack/${botA}/oauth/callback`);
    atA.search = ofB.search;
    exchanged = exchanges();
    expect((await fetch(atA)).status).toBe(400);
    expect(exchanges()).toBe(exchanged);
    expect(await installs(botA)).toEqual(before);
    expect(await installs(botB)).toEqual([]);

    // Missing parameters and a cancelled install say what to do.
    const bare = await fetch(`${roost.url}/v1/slack/${botA}/oauth/callback`);
    expect(bare.status).toBe(400);
    expect(await bare.text()).toContain("start the install again");
    const cancelled = await fetch(
      `${roost.url}/v1/slack/${botA}/oauth/callback?error=access_denied&state=x`,
    );
    expect(cancelled.status).toBe(400);
    // The page echoes nothing of the request.
    const echoed = await fetch(
      `${roost.url}/v1/slack/${botA}/oauth/callback?code=%3Cscript%3E&state=%3Cscript%3Ealert(1)`,
    );
    expect(echoed.status).toBe(400);
    expect(await echoed.text()).not.toContain("<script>");
  });
});
