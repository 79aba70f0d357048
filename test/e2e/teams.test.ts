/**
 * Team bots end to end (docs/teams.md): the real server process with its embedded Restate, the
 * real computers (the sandbox as root) and the demo model. The routing table row by row: a shell
 * call in the owner's chat, in a teammate's chat and in a shared place each lands on its own
 * computer (a file written in one is not in the others) with the right secrets (ROUTE2); an
 * approval in a teammate's chat reaches the teammate, not the bot's owner (ROUTE3); usage is
 * billed to whoever talks.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient, type TestStep } from "../support/api-client.ts";
import { testComputerProvider } from "../support/provider.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

describe(`team bots end to end (${testComputerProvider} provider, demo model)`, () => {
  let dataDir: string;
  let roost: RoostProcess;
  let owner: ReturnType<typeof apiClient>;
  let mate: ReturnType<typeof apiClient>;
  let mateId: string;
  let botId: string;
  const ownerKey = `owner-${randomBytes(8).toString("hex")}`;
  const botKey = `bot-${randomBytes(8).toString("hex")}`;
  const mateKey = `mate-${randomBytes(8).toString("hex")}`;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-teams-"));
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_COMPUTER_PROVIDER: testComputerProvider,
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        ROOST_MEMORY_PASS: "off",
      },
    });
    await roost.start();
    owner = apiClient(roost.url, roost.token);
    const created = await owner.call<Api.CreatedAccount>("POST", "/v1/accounts", { name: "mia" });
    mateId = created.account.id;
    mate = apiClient(roost.url, () => created.token);
    const team = await owner.call<Api.TeamDetail>("POST", "/v1/teams", { name: "Ops" });
    await owner.call("POST", `/v1/teams/${team.id}/members`, { accountId: mateId, role: "member" });
    const bot = await owner.call<Api.Bot>("POST", "/v1/bots", {
      name: "ops",
      instructions: "Be brief.",
      model: "demo",
      teamId: team.id,
    });
    botId = bot.id;
    await owner.call("PUT", "/v1/me/secrets/OWNER_KEY", { value: ownerKey });
    await owner.call("PUT", `/v1/bots/${botId}/secrets/BOT_KEY`, { value: botKey });
    await mate.call("PUT", "/v1/me/secrets/MATE_KEY", { value: mateKey });
  }, 180_000);
  afterAll(async () => {
    await roost?.stop();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  /** Sends `text` and answers the turn's last tool step once its reply is stored. */
  async function shell(
    api: ReturnType<typeof apiClient>,
    conversationId: string,
    text: string,
  ): Promise<TestStep> {
    const before = (await api.steps(conversationId)).filter((s) => s.kind === "reply").length;
    await api.send(conversationId, text);
    const steps = await api.waitForSteps(conversationId, "reply", before + 1, 120_000);
    return steps.filter((step) => step.kind === "tool").at(-1)!;
  }
  // printenv, not $NAME: naming a teammate's secret in a shared place asks for consent (CONS1).
  const probe = (tag: string) =>
    `$ cat /workspace/who 2>/dev/null || echo absent; echo ${tag} > /workspace/who; echo "o=$(printenv OWNER_KEY || echo none) b=$(printenv BOT_KEY || echo none) m=$(printenv MATE_KEY || echo none)"`;

  it("row by row: each conversation's shell runs on its own computer with its own secrets", async () => {
    const ownChat = await owner.createConversation(botId);
    const mateChat = await mate.createConversation(botId);
    const shared = await mate.call<Api.Conversation>("POST", "/v1/conversations", {
      botId,
      place: "shared",
    });

    // The owner's own chat: the owner's computer, their secret and the bot's.
    const first = String((await shell(owner, ownChat.id, probe("owner"))).payload.output);
    expect(first).toContain("absent");
    expect(first).toContain("o=[REDACTED] b=[REDACTED] m=none");

    // A teammate's chat: the teammate's computer (no owner file), their secret only (ROUTE2).
    const second = String((await shell(mate, mateChat.id, probe("mate"))).payload.output);
    expect(second).toContain("absent");
    expect(second).toContain("o=none b=none m=[REDACTED]");

    // A shared place: the bot's shared computer, the bot's own secret only, redacted (ROUTE4).
    const third = String((await shell(mate, shared.id, probe("shared"))).payload.output);
    expect(third).toContain("absent");
    expect(third).toContain("o=none b=[REDACTED] m=none");

    // Each computer kept its own file.
    for (const [api, id, tag] of [
      [owner, ownChat.id, "owner"],
      [mate, mateChat.id, "mate"],
      [mate, shared.id, "shared"],
    ] as const) {
      const output = String((await shell(api, id, "$ cat /workspace/who")).payload.output);
      expect(output.split("stdout:\n")[1]?.trim()).toBe(tag);
    }
    for (const [output] of [[first], [second], [third]])
      for (const value of [ownerKey, botKey, mateKey]) expect(output).not.toContain(value);

    // The teammate's own computer is theirs (the files API names it), and is not the owner's.
    const mine = await mate.call<{ id: string }>("GET", "/v1/computers/me");
    const theirs = await owner.call<{ id: string }>("GET", "/v1/computers/me");
    expect(mine.id).not.toBe(theirs.id);

    // Usage is billed to whoever talked: the teammate's turns are the teammate's.
    const usage = await mate.call<Api.UsageReport>("GET", "/v1/usage?groupBy=bot");
    expect(usage.groups.find((group) => group.key === botId)?.calls).toBeGreaterThan(0);
  }, 600_000);

  /** The one pending approval of `api`'s account. */
  const pendingOf = (api: ReturnType<typeof apiClient>) =>
    waitFor(
      async () =>
        (await api.call<Api.ApprovalList>("GET", "/v1/approvals?state=pending")).approvals[0],
      { timeoutMs: 120_000, what: "a pending approval" },
    );
  /** Sends `text`, answers its consent card with `decision`, and answers the tool's output. */
  async function withCard(
    conversationId: string,
    text: string,
    decision: "approve" | "deny",
  ): Promise<{ card: Api.Approval; output: string }> {
    const before = (await mate.steps(conversationId)).filter((s) => s.kind === "reply").length;
    await mate.send(conversationId, text);
    const card = await pendingOf(mate);
    expect(
      (await owner.call<Api.ApprovalList>("GET", "/v1/approvals?state=pending")).approvals,
    ).toEqual([]);
    await mate.call("POST", `/v1/approvals/${card.id}`, { decision });
    const steps = await mate.waitForSteps(conversationId, "reply", before + 1, 120_000);
    return { card, output: String(steps.filter((s) => s.kind === "tool").at(-1)!.payload.output) };
  }

  it("CONS1-CONS3: a teammate's secret in a shared place waits for their consent card, per place, revocable", async () => {
    const place = await mate.call<Api.Conversation>("POST", "/v1/conversations", {
      botId,
      place: "shared",
    });
    const command = `$ echo "m=\${MATE_KEY:-none}"`;
    const denied = await withCard(place.id, command, "deny");
    expect(denied.card.reason).toContain("consent: this command uses mia's secret MATE_KEY");
    expect(denied.card.approvers).toEqual([mateId]);
    expect(denied.output).toContain("Not approved");
    expect(denied.output).not.toContain("m=");
    const allowed = await withCard(place.id, command, "approve");
    expect(allowed.output).toContain("m=[REDACTED]");
    expect(allowed.output).not.toContain(mateKey);
    // Remembered for this bot and place: no card the next time, whoever talks there.
    expect(String((await shell(mate, place.id, command)).payload.output)).toContain("m=[REDACTED]");
    expect(String((await shell(owner, place.id, command)).payload.output)).toContain(
      "m=[REDACTED]",
    );
    const consents = await mate.call<Api.ConsentList>("GET", "/v1/me/consents");
    expect(consents.consents).toEqual([
      expect.objectContaining({ botId, placeId: place.id, kind: "secret", name: "MATE_KEY" }),
    ]);
    expect((await owner.call<Api.ConsentList>("GET", "/v1/me/consents")).consents).toEqual([]);
    // Another shared place asks again.
    const other = await mate.call<Api.Conversation>("POST", "/v1/conversations", {
      botId,
      place: "shared",
    });
    expect((await withCard(other.id, command, "deny")).output).toContain("Not approved");
    // Revoked: the first place asks again.
    const body = { botId, placeId: place.id, kind: "secret", name: "MATE_KEY" };
    await expect(owner.call("DELETE", "/v1/me/consents", body)).rejects.toThrow(/404/);
    await mate.call("DELETE", "/v1/me/consents", body).catch((error: unknown) => {
      if (!String(error).includes("Unexpected end of JSON")) throw error; // 204: no body
    });
    expect((await mate.call<Api.ConsentList>("GET", "/v1/me/consents")).consents).toEqual([]);
    expect((await withCard(place.id, command, "deny")).output).toContain("Not approved");
  }, 600_000);

  it("ROUTE3: an approval in a teammate's chat reaches the teammate, not the bot's owner", async () => {
    const mateChat = await mate.createConversation(botId);
    await mate.send(mateChat.id, "$ mkdir -p /workspace/old && rm -r /workspace/old");
    const pending = await waitFor(
      async () => {
        const list = await mate.call<Api.ApprovalList>("GET", "/v1/approvals?state=pending");
        return list.approvals[0];
      },
      { timeoutMs: 120_000, what: "the teammate's approval" },
    );
    expect(pending.conversationId).toBe(mateChat.id);
    const ownerList = await owner.call<Api.ApprovalList>("GET", "/v1/approvals?state=pending");
    expect(ownerList.approvals).toEqual([]);
    // The teammate answers for their credentials, but may not write rules into the owner's bot.
    await expect(
      mate.call("POST", `/v1/approvals/${pending.id}`, {
        decision: "approve",
        remember: "rm -r *",
      }),
    ).rejects.toThrow(/403.*only the bot's owner can remember/);
    const decided = await mate.call<Api.Approval>("POST", `/v1/approvals/${pending.id}`, {
      decision: "approve",
    });
    expect(decided).toMatchObject({ state: "approved", decidedBy: mateId });
    await mate.waitForSteps(mateChat.id, "reply", 1, 120_000);
  }, 300_000);
});
