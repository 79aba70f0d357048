/**
 * The OAuth install of a bot's Slack app (service.ts SLK25–SLK27) on a real SQLite store, against
 * the fake Slack on 127.0.0.1 (its authorize page and oauth.v2.access), with a scripted clock so
 * a state can expire.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeSlack, type FakeSlack } from "../../test/support/fake-slack.ts";
import { silentLogger } from "../log/index.ts";
import { createSecretCipher } from "../secrets/index.ts";
import { storeOpeners } from "../store/testing/openers.ts";
import type { Bot, Store } from "../store/index.ts";
import { createSlackLinks, oauthStateTtlMs, type SlackLinks } from "./service.ts";

const [[, openSqlite]] = (await storeOpeners("roost-slack-oauth-")) as [
  [string, NonNullable<Awaited<ReturnType<typeof storeOpeners>>[number][1]>],
];
const baseUrl = "https://roost.example.com";

describe("Slack OAuth install (service, SQLite)", () => {
  let slack: FakeSlack;
  let store: Store;
  let close: () => Promise<void>;
  let links: SlackLinks;
  let bot: Bot;
  /** Shifts the service's clock (the store keeps the real one). */
  let offsetMs = 0;

  beforeAll(async () => {
    slack = await startFakeSlack();
    ({ store, close } = await openSqlite());
    links = createSlackLinks({
      store,
      cipher: createSecretCipher(randomBytes(32)),
      logger: silentLogger,
      clock: () => Date.now() + offsetMs,
    });
    const owner = await store.createAccount({ name: "ann", isAdmin: false });
    bot = await store.createBot({ accountId: owner.id, name: "b", instructions: "", model: null });
  });
  afterAll(async () => {
    await close?.();
    await slack?.close();
  });

  const linkOAuth = (clientSecret = slack.clientSecret) =>
    links.link(
      bot,
      {
        botToken: null,
        oauth: { clientId: slack.clientId, clientSecret },
        signingSecret: slack.signingSecret,
        apiUrl: slack.apiUrl,
        appToken: null,
      },
      baseUrl,
    );
  /** The person approves in workspace `team`: Slack's redirect back, as code and state. */
  async function approve(team: string) {
    const link = (await store.getSlackLink(bot.id))!;
    const authorize = new URL(await links.startInstall(link, bot.accountId, baseUrl));
    expect(authorize.pathname).toBe("/oauth/v2/authorize");
    expect(authorize.searchParams.get("redirect_uri")).toBe(
      `${baseUrl}/v1/slack/${bot.id}/oauth/callback`,
    );
    authorize.searchParams.set("team", team);
    const answer = await fetch(authorize, { redirect: "manual" });
    expect(answer.status).toBe(302);
    const back = new URL(answer.headers.get("location")!);
    return { code: back.searchParams.get("code")!, state: back.searchParams.get("state")! };
  }
  const exchanges = () => slack.callsOf("oauth.v2.access").length;

  it("an expired state is refused before any Slack call, and stores nothing", async () => {
    await linkOAuth();
    offsetMs = -oauthStateTtlMs - 1000; // the state was made longer ago than it lives
    const grant = await approve("T0EXPIRE1");
    offsetMs = 0;
    const before = exchanges();
    await expect(links.finishInstall(bot.id, grant, baseUrl)).rejects.toThrow(
      /state is unknown, used, expired/,
    );
    expect(exchanges()).toBe(before);
    expect(await store.listSlackInstalls(bot.id)).toEqual([]);
  });

  it("a wrong client secret is Slack's bad_client_secret, said plainly; nothing is stored", async () => {
    await linkOAuth("0123456789abcdef0123456789abcdef");
    const grant = await approve("T0SECRET1");
    await expect(links.finishInstall(bot.id, grant, baseUrl)).rejects.toThrow(/bad_client_secret/);
    expect(await store.listSlackInstalls(bot.id)).toEqual([]);
  });

  it("a code Slack does not know is invalid_code; the state is spent all the same", async () => {
    await linkOAuth();
    const grant = await approve("T0CODE001");
    await expect(
      links.finishInstall(bot.id, { ...grant, code: "1.not-a-code" }, baseUrl),
    ).rejects.toThrow(/invalid_code/);
    await expect(links.finishInstall(bot.id, grant, baseUrl)).rejects.toThrow(/state is unknown/);
    expect(await store.listSlackInstalls(bot.id)).toEqual([]);
  });

  it("an install seals its token (not in the row) and opens per workspace; none for another", async () => {
    await linkOAuth();
    const workspace = await links.finishInstall(bot.id, await approve("T0GOOD001"), baseUrl);
    expect(workspace).toMatchObject({ id: "T0GOOD001", name: "Workspace T0GOOD001" });
    const token = slack.installedToken("T0GOOD001")!;
    const [row] = await store.listSlackInstalls(bot.id);
    expect(row?.sealedToken).not.toContain(token);
    const opened = await links.open(bot.id, "T0GOOD001");
    expect(opened?.token).toBe(token);
    expect(opened?.link.slackTeamId).toBe("T0GOOD001");
    expect((await links.open(bot.id, "T0OTHER01"))?.token).toBe("");
    expect((await links.open(bot.id))?.token).toBe("");
    const status = await links.status(bot.id, baseUrl);
    expect(JSON.stringify(status)).not.toContain(token);
    expect(JSON.stringify(status)).not.toContain(slack.clientSecret);
    expect(status?.oauth?.workspaces.map((found) => found.id)).toEqual(["T0GOOD001"]);
  });
});
