/**
 * Results end to end (issue 11 §2–§3), the real platform in-process with its embedded Restate and
 * the demo model: bots messaging each other until the hop limit stops them, drafts sent through
 * the owner's webhook (a real HTTP server on 127.0.0.1, reached as a public name the test routes),
 * notifications with their live stream and webhook, the sidebar's states, and the attacks.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCliPlatform, type CliPlatform } from "../../src/cli/testing/platform.ts";
import { signature } from "../../src/notifications/index.ts";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient, type TestStep } from "../support/api-client.ts";
import { openEventStream } from "../support/sse.ts";
import { waitFor } from "../support/wait.ts";

const publicHook = "93.184.216.34";

interface Hit {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** The owner's endpoint: answers `status()` for each post, records every post. */
async function startHookServer() {
  const hits: Hit[] = [];
  let status = () => 200;
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      hits.push({ path: request.url ?? "", headers: request.headers, body });
      response.writeHead(status()).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    hits,
    port: (server.address() as AddressInfo).port,
    answer(next: () => number) {
      status = next;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const messagesOf = (steps: TestStep[]) =>
  steps
    .filter((step) => step.kind === "message")
    .map((step) => step.payload as unknown as Api.MessagePayload);

describe("results end to end (demo model)", () => {
  let roost: CliPlatform;
  let hooks: Awaited<ReturnType<typeof startHookServer>>;
  let api: ReturnType<typeof apiClient>;
  let other: ReturnType<typeof apiClient>;
  let otherToken: string;

  beforeAll(async () => {
    hooks = await startHookServer();
    roost = await startCliPlatform({
      env: {
        ROOST_FOLLOW_UP_WINDOW_MS: "100",
        ROOST_MEMORY_PASS: "0",
        ROOST_BOT_MESSAGE_MAX_HOPS: "4",
        ROOST_OWNER_WEBHOOK_RETRY_MS: "50",
        ROOST_OWNER_WEBHOOK_ATTEMPTS: "4",
      },
      results: {
        ownerWebhooks: {
          resolve: async (host) => (host === "hooks.example.com" ? [publicHook] : []),
          connect: (address, port) => connect(port, address === publicHook ? "127.0.0.1" : address),
        },
      },
    });
    api = apiClient(roost.url, () => roost.adminToken);
    const created = await api.call<Api.CreatedAccount>("POST", "/v1/accounts", { name: "mallory" });
    otherToken = created.token;
    other = apiClient(roost.url, () => otherToken);
  }, 120_000);
  afterAll(async () => {
    await roost?.close();
    await hooks?.close();
  });

  /**
   * A conversation's sidebar state once its turn has ended: the reply step is stored a moment
   * before the turn finishes, and the sidebar says `working` until then.
   */
  const settledActivity = (botId: string, conversationId: string) =>
    waitFor(
      async () => {
        const { conversations } = await api.call<Api.ConversationList>(
          "GET",
          `/v1/conversations?botId=${botId}`,
        );
        const activity = conversations.find(
          (conversation) => conversation.id === conversationId,
        )?.activity;
        return activity !== undefined && activity !== "working" && activity;
      },
      { what: `conversation ${conversationId}'s turn to end` },
    );

  it("two bots ping-pong until the hop limit; every hop is visible in both conversations, and nothing is sent twice", async () => {
    const a = await api.createBot("alpha", "demo");
    const b = await api.createBot("beta", "demo");
    const chat = await api.createConversation(a.id);
    await api.send(
      chat.id,
      "tell beta: tell alpha: tell beta: tell alpha: tell beta: tell alpha: hi",
    );

    // alpha → beta (hop 1), beta → alpha (2), alpha → beta (3), beta → alpha (4); alpha's next is refused.
    const chatSteps = await waitFor(
      async () => {
        const steps = await api.steps(chat.id);
        const refused = steps.some(
          (step) =>
            step.kind === "tool" &&
            (step.payload as { details?: { code?: string } }).details?.code === "hop_limit",
        );
        return refused && steps.filter((step) => step.kind === "reply").length >= 3
          ? steps
          : undefined;
      },
      { timeoutMs: 60_000, what: "the hop limit to stop the chain" },
    );
    const conversations = await api.call<Api.ConversationList>(
      "GET",
      `/v1/conversations?botId=${b.id}`,
    );
    const thread = conversations.conversations.find(
      (conversation) => conversation.title === "From alpha",
    );
    expect(thread).toBeDefined();
    const threadSteps = await api.waitForSteps(thread!.id, "reply", 2);

    const intoChat = messagesOf(chatSteps).filter((message) => message.source?.kind === "bot");
    const intoThread = messagesOf(threadSteps);
    expect(intoThread.map((message) => message.source)).toEqual([
      { kind: "bot", fromBotId: a.id, fromConversationId: chat.id, hop: 1 },
      { kind: "bot", fromBotId: a.id, fromConversationId: chat.id, hop: 3 },
    ]);
    // beta answers back into the conversation alpha wrote from, not a thread of its own.
    expect(intoChat.map((message) => message.source)).toEqual([
      { kind: "bot", fromBotId: b.id, fromConversationId: thread!.id, hop: 2 },
      { kind: "bot", fromBotId: b.id, fromConversationId: thread!.id, hop: 4 },
    ]);
    expect(intoChat.map((message) => message.text)).toEqual([
      "tell beta: tell alpha: tell beta: tell alpha: hi",
      "tell beta: tell alpha: hi",
    ]);
    // The message works for the person who started the chain (BOT4).
    const me = await api.call<Api.Me>("GET", "/v1/me");
    expect(new Set([...intoChat, ...intoThread].map((message) => message.authorAccountId))).toEqual(
      new Set([me.id]),
    );
    // Each send is a tool step in the sender's conversation.
    const sent = chatSteps.filter(
      (step) =>
        step.kind === "tool" && (step.payload as unknown as Api.ToolPayload).name === "message_bot",
    );
    expect(sent.map((step) => (step.payload as unknown as Api.ToolPayload).isError)).toEqual([
      false,
      false,
      true,
    ]);
    // The unread thread shows as such in the sidebar until the owner reads it.
    expect(await settledActivity(b.id, thread!.id)).toBe("unread");
    await api.call("POST", `/v1/conversations/${thread!.id}/seen`, { seq: thread!.lastSeq + 1000 });
    const read = await api.call<Api.ConversationList>("GET", `/v1/conversations?botId=${b.id}`);
    const after = read.conversations.find((conversation) => conversation.id === thread!.id);
    expect(after?.activity).toBe("idle");
  }, 90_000);

  it("attack: message_bot never reaches another account's bot, by name or by id", async () => {
    const theirs = await other.createBot("secret-bot", "demo");
    const mine = await api.createBot("gamma", "demo");
    const chat = await api.createConversation(mine.id);
    await api.send(chat.id, `tell ${theirs.id}: hello`);
    await api.waitForSteps(chat.id, "reply");
    await api.send(chat.id, "tell secret-bot: hello");
    const steps = await api.waitForSteps(chat.id, "tool", 2);
    const outputs = steps
      .filter((step) => step.kind === "tool")
      .map((step) => step.payload as unknown as Api.ToolPayload);
    expect(
      outputs.every((output) => output.isError && output.output.startsWith("There is no bot")),
    ).toBe(true);
    expect(
      (await other.call<Api.ConversationList>("GET", "/v1/conversations")).conversations,
    ).toEqual([]);
  }, 60_000);

  it("a draft: a card in the conversation, a clear error without a channel, sent once through the drafts webhook", async () => {
    const bot = await api.createBot("writer", "demo");
    const chat = await api.createConversation(bot.id);
    await api.send(chat.id, "draft email ada@example.com / Lunch: Dear Ada, lunch on Friday?");
    await api.waitForSteps(chat.id, "reply");
    const { drafts } = await api.call<Api.DraftList>("GET", `/v1/conversations/${chat.id}/drafts`);
    expect(drafts).toHaveLength(1);
    const draft = drafts[0]!;
    expect(draft).toMatchObject({
      kind: "email",
      to: "ada@example.com",
      subject: "Lunch",
      status: "pending",
    });
    expect(draft.text).toBe("Dear Ada, lunch on Friday?");
    // It is a needs-attention conversation while the draft waits.
    expect(await settledActivity(bot.id, chat.id)).toBe("needs_attention");

    // No channel: a clear error on the draft, which stays sendable.
    const unsent = await api.call<Api.Draft>("POST", `/v1/drafts/${draft.id}/send`);
    expect(unsent.status).toBe("failed");
    expect(unsent.error).toContain("No email channel is configured");
    expect(unsent.error).toContain("PUT /v1/drafts/webhook");

    // Attack: another account cannot see, send or discard it.
    for (const [method, path] of [
      ["GET", `/v1/drafts/${draft.id}`],
      ["POST", `/v1/drafts/${draft.id}/send`],
      ["POST", `/v1/drafts/${draft.id}/discard`],
      ["GET", `/v1/conversations/${chat.id}/drafts`],
    ] as const)
      await expect(other.call(method, path)).rejects.toThrow(/: 404 /);
    expect((await other.call<Api.DraftList>("GET", "/v1/drafts")).drafts).toEqual([]);

    const webhook = await api.call<Api.OwnerWebhookCreated>("PUT", "/v1/drafts/webhook", {
      url: `http://hooks.example.com:${hooks.port}/drafts`,
    });
    expect(webhook.secret).toMatch(/^whsec_/);
    expect(JSON.stringify(await api.call("GET", "/v1/drafts/webhook"))).not.toContain(
      webhook.secret,
    );
    const before = hooks.hits.length;
    // A double send race: two at once, sent once.
    const [first, second] = await Promise.allSettled([
      api.call<Api.Draft>("POST", `/v1/drafts/${draft.id}/send`),
      api.call<Api.Draft>("POST", `/v1/drafts/${draft.id}/send`),
    ]);
    const answered = [first, second].flatMap((result) =>
      result.status === "fulfilled" ? [result.value] : [],
    );
    expect(answered.length).toBeGreaterThanOrEqual(1);
    for (const result of [first, second])
      if (result.status === "rejected") expect(String(result.reason)).toMatch(/: 409 /);
    expect(answered.every((sent) => sent.status === "sent" && sent.channel === "webhook")).toBe(
      true,
    );
    const posts = hooks.hits.slice(before).filter((hit) => hit.path === "/drafts");
    expect(posts).toHaveLength(1);
    const delivery = JSON.parse(posts[0]!.body) as Api.DraftDelivery;
    expect(delivery).toMatchObject({
      type: "draft",
      deliveryId: `${draft.id}:2`,
      draft: { id: draft.id, to: "ada@example.com" },
    });
    expect(posts[0]!.headers["x-roost-signature"]).toBe(signature(webhook.secret, posts[0]!.body));
    // Sent once for good: sending or discarding again is a conflict.
    await expect(api.call("POST", `/v1/drafts/${draft.id}/send`)).rejects.toThrow(
      /: 409 .*sent already/,
    );
    await expect(api.call("POST", `/v1/drafts/${draft.id}/discard`)).rejects.toThrow(/: 409 /);
    const audit = (await api.call<{ drafts: Api.Draft[] }>("GET", "/v1/drafts?status=sent")).drafts;
    expect(audit.map((sent) => sent.id)).toEqual([draft.id]);
  }, 90_000);

  it("discard: a discarded draft is never sent", async () => {
    const bot = await api.createBot("discarder", "demo");
    const chat = await api.createConversation(bot.id);
    await api.send(chat.id, "draft slack #general: standup in 5");
    await api.waitForSteps(chat.id, "reply");
    const { drafts } = await api.call<Api.DraftList>("GET", `/v1/drafts?conversationId=${chat.id}`);
    const discarded = await api.call<Api.Draft>("POST", `/v1/drafts/${drafts[0]!.id}/discard`);
    expect(discarded.status).toBe("discarded");
    await expect(api.call("POST", `/v1/drafts/${drafts[0]!.id}/send`)).rejects.toThrow(/: 409 /);
  }, 60_000);

  it("notifications: a bot that notifies tells the owner's stream and webhook once per turn; mark-read; another account sees none", async () => {
    const stream = await openEventStream(`${roost.url}/v1/events`, roost.adminToken);
    try {
      await stream.next((event) => event.event === "hello");
      const webhook = await api.call<Api.OwnerWebhookCreated>("PUT", "/v1/notifications/webhook", {
        url: `http://hooks.example.com:${hooks.port}/notify`,
      });
      // The endpoint fails twice, then takes it: the delivery is retried with backoff.
      let answers = 0;
      hooks.answer(() => (++answers <= 2 ? 503 : 200));
      const bot = await api.call<Api.Bot>("POST", "/v1/bots", {
        name: "notifier",
        model: "demo",
        notify: true,
      });
      expect(bot.notify).toBe(true);
      const chat = await api.createConversation(bot.id);
      await api.send(chat.id, "hello there");
      await api.waitForSteps(chat.id, "reply");

      const live = await stream.next((event) => event.event === "notification");
      const notification = (live.data as { notification: Api.Notification }).notification;
      expect(notification).toMatchObject({
        kind: "finished",
        title: "notifier finished",
        conversationId: chat.id,
        needsAttention: false,
      });
      expect(notification.body).toContain("You said");
      await stream.next(
        (event) =>
          event.event === "activity" &&
          (event.data as { conversationId: string }).conversationId === chat.id,
      );

      const posted = await waitFor(
        () => {
          const hits = hooks.hits.filter((hit) => hit.path === "/notify");
          return hits.length >= 3 ? hits : undefined;
        },
        { timeoutMs: 20_000, what: "the third delivery attempt" },
      );
      expect(posted.map((hit) => hit.headers["x-roost-delivery"])).toEqual(
        Array(3).fill(posted[0]!.headers["x-roost-delivery"]),
      );
      expect(posted[2]!.headers["x-roost-signature"]).toBe(
        signature(webhook.secret, posted[2]!.body),
      );
      expect((JSON.parse(posted[2]!.body) as Api.NotificationDelivery).notification.id).toBe(
        notification.id,
      );
      hooks.answer(() => 200);

      const listed = await api.call<Api.NotificationList>("GET", "/v1/notifications?unread=true");
      expect(listed.notifications.map((item) => item.id)).toContain(notification.id);
      // Attack: another account sees none of it and cannot mark it.
      expect(await other.call<Api.NotificationList>("GET", "/v1/notifications")).toEqual({
        notifications: [],
        unread: 0,
      });
      await expect(
        other.call("POST", `/v1/notifications/${encodeURIComponent(notification.id)}/read`),
      ).rejects.toThrow(/: 404 /);
      expect(await other.call("POST", "/v1/notifications/read", { all: true })).toEqual({
        marked: 0,
      });

      const marked = await api.call<Api.NotificationsRead>(
        "POST",
        `/v1/notifications/${encodeURIComponent(notification.id)}/read`,
      );
      expect(marked.marked).toBe(1);
      const unread = await api.call<Api.NotificationList>("GET", "/v1/notifications?unread=true");
      expect(unread.notifications.map((item) => item.id)).not.toContain(notification.id);
      expect(hooks.hits.filter((hit) => hit.path === "/notify")).toHaveLength(3);
    } finally {
      await stream.close();
    }
  }, 90_000);

  it("attack: webhook URLs of the host, loopback, link-local, or Roost's own port are refused and nothing is stored", async () => {
    for (const url of [
      "http://127.0.0.1:7700/",
      "http://localhost/",
      "http://169.254.169.254/latest/meta-data/",
      `http://[::ffff:127.0.0.1]:${new URL(roost.url).port}/`,
      "http://10.0.0.1/",
      "file:///etc/passwd",
    ])
      await expect(api.call("PUT", "/v1/notifications/webhook", { url }), url).rejects.toThrow(
        /: 400 /,
      );
    await expect(other.call("GET", "/v1/notifications/webhook")).rejects.toThrow(/: 404 /);
    await expect(
      other.call("PUT", "/v1/notifications/webhook", {
        url: "http://hooks.example.com/x",
        extra: 1,
      }),
    ).rejects.toThrow(/: 400 /);
  });
});
