/**
 * The browser end to end (issue 13 §1): a real Roost with a real computer (the `local` provider:
 * bubblewrap, a network namespace holding only loopback, the egress proxy), real Chromium, Xvfb
 * and x11vnc inside it, driven by a model (a fake OpenAI-compatible server on 127.0.0.1 whose
 * script turns `browser {json}` and `$ command` messages into tool calls). The outside host of the
 * egress test lives in a network namespace this test creates, like test/e2e/egress.test.ts.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { skipReason } from "../../src/computers/local/testing/index.ts";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../../src/models/testing/index.ts";
import { missingScreenPrograms } from "../../src/worker/screens.ts";
import { apiClient } from "../support/api-client.ts";
import { rawRequest } from "../support/raw-http.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

const skip =
  (await skipReason("test/e2e/browser.test.ts")) ??
  missingScreenPrograms({ PATH: "/usr/bin:/bin" }, "/usr/bin/chromium");

/** An HTTP server in its own namespace, reachable from the host over a veth (198.18.0.0/15, RFC 2544). */
function startOutsideHttpHost() {
  const tag = randomBytes(3).toString("hex");
  const netns = `roostbrw-${tag}`;
  const hostSide = `rtb-${tag}`;
  const block = (randomBytes(2).readUInt16BE(0) % 16_384) * 4;
  const prefix = `198.19.${Math.floor(block / 256)}`;
  const address = `${prefix}.${(block % 256) + 2}`;
  const ip = (...args: string[]) => {
    const result = spawnSync("ip", args, { encoding: "utf8" });
    if (result.status !== 0) throw new Error(`ip ${args.join(" ")}: ${result.stderr}`);
  };
  ip("netns", "add", netns);
  ip("link", "add", hostSide, "type", "veth", "peer", "name", "eth0", "netns", netns);
  ip("addr", "add", `${prefix}.${(block % 256) + 1}/30`, "dev", hostSide);
  ip("link", "set", hostSide, "up");
  ip("-n", netns, "addr", "add", `${address}/30`, "dev", "eth0");
  ip("-n", netns, "link", "set", "eth0", "up");
  const source = `require("node:http").createServer((q, s) => { s.setHeader("content-type", "text/html"); s.end("<title>Outside</title><h1>hello from outside</h1>"); }).listen(8080, "0.0.0.0", () => console.log("ready"));`;
  const server: ChildProcess = spawn(
    "ip",
    ["netns", "exec", netns, process.execPath, "-e", source],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  return {
    address,
    ready: new Promise<void>((resolve) => server.stdout!.once("data", () => resolve())),
    close() {
      server.kill("SIGKILL");
      spawnSync("ip", ["link", "del", hostSide]);
      spawnSync("ip", ["netns", "del", netns]);
    },
  };
}

const site: Record<string, string> = {
  "index.html": `<!doctype html><title>Inside page</title>
<h1>Served inside the computer</h1>
<button onclick="document.getElementById('out').textContent='the button was clicked'">Press me</button>
<p id="out">waiting for a click</p>
<form onsubmit="event.preventDefault(); document.getElementById('echo').textContent='hello ' + document.getElementById('name').value">
<label for="name">Your name</label><input id="name"><button type="submit">Send</button></form>
<p id="echo"></p>`,
  "set-cookie.html": `<!doctype html><title>Set</title><script>document.cookie = "roost_login=kept-across-sleep; max-age=86400; path=/";</script><p>cookie set</p>`,
  "download.html": `<!doctype html><title>Reports</title><a href="report.txt" download="report.txt">Get the report</a>`,
  "report.txt": "quarterly numbers: 42\n",
  "show-cookie.html": `<!doctype html><title>Show</title><p id="c"></p><script>document.getElementById('c').textContent = 'cookies: ' + document.cookie;</script>`,
};

describe.skipIf(skip !== undefined)("the browser inside a real computer (local provider)", () => {
  let dataDir: string;
  let roost: RoostProcess;
  let fake: FakeOpenAiServer;
  let outside: ReturnType<typeof startOutsideHttpHost>;
  let api: ReturnType<typeof apiClient>;
  let conversationId: string;
  let botId: string;

  /** One turn: the message becomes one tool call (the fake's script); returns the tool step's payload. */
  async function tool(
    message: string,
    conversation = conversationId,
  ): Promise<{ output: string; isError: boolean; details: Record<string, unknown> }> {
    const before = (await api.steps(conversation)).filter((step) => step.kind === "reply").length;
    await api.send(conversation, message);
    const steps = await api.waitForSteps(conversation, "reply", before + 1, 180_000);
    const step = steps.filter((entry) => entry.kind === "tool").at(-1)!;
    return step.payload as { output: string; isError: boolean; details: Record<string, unknown> };
  }
  const browser = (input: Record<string, unknown>) => tool(`browser ${JSON.stringify(input)}`);
  const refOf = (snapshot: string, pattern: RegExp) => {
    const line = snapshot.split("\n").find((entry) => pattern.test(entry));
    const ref = /\[ref=([a-z0-9]+)\]/.exec(line ?? "")?.[1];
    if (ref === undefined) throw new Error(`no ref for ${pattern} in:\n${snapshot}`);
    return ref;
  };
  const upload = async (file: string, content: string) => {
    const answer = await rawRequest(
      `${roost.url}/v1/computers/me/files/content?path=${encodeURIComponent(file)}`,
      { method: "PUT", headers: { authorization: `Bearer ${roost.token()}` }, body: content },
    );
    expect(answer.status, answer.text).toBe(201);
  };
  const serveSite = async () => {
    const started = await tool(
      "$ cd /workspace/site && (setsid python3 -m http.server 8000 --bind 127.0.0.1 >/tmp/http.log 2>&1 &) && for i in $(seq 100); do curl -s -o /dev/null --noproxy '*' http://127.0.0.1:8000/ && break; sleep 0.1; done; echo serving",
    );
    expect(started.output).toContain("serving");
  };

  beforeAll(async () => {
    outside = startOutsideHttpHost();
    await outside.ready;
    fake = await startFakeOpenAiServer((request) => {
      const messages = request.body?.messages ?? [];
      const last = messages.at(-1);
      if (last?.role === "tool") return { type: "completion", textChunks: ["done"] };
      const text = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content);
      const browse = /^(browser|computer) (\{[\s\S]*\})$/.exec(text);
      if (browse !== null)
        return { type: "completion", toolCalls: [{ name: browse[1]!, arguments: browse[2]! }] };
      const shell = /^\$ ([\s\S]+)$/.exec(text);
      if (shell !== null)
        return {
          type: "completion",
          toolCalls: [{ name: "shell", arguments: { command: shell[1]! } }],
        };
      return { type: "completion", textChunks: ["say browser {…} or $ command"] };
    });
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-browser-"));
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_COMPUTER_PROVIDER: "local",
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        // One screen per computer: a second bot of the account finds it taken (SCR1).
        ROOST_SCREENS_MAX: "1",
        // "vision" in the name: the model accepts images (models/media.ts).
        ROOST_MODEL: "openai-compatible:fake-vision-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
      },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
    botId = (await api.createBot("surfer")).id;
    conversationId = (await api.createConversation(botId)).id;
    await tool("$ mkdir -p /workspace/site && echo made");
    for (const [name, content] of Object.entries(site))
      await upload(`/workspace/site/${name}`, content);
    await serveSite();
  }, 240_000);
  afterAll(async () => {
    await roost?.stop();
    await fake?.close();
    outside?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("a page served inside the computer is opened: its text is in the snapshot, a click by ref changes it, typing fills a form", async () => {
    const opened = await browser({ action: "navigate", url: "http://127.0.0.1:8000/index.html" });
    expect(opened.isError, opened.output).toBe(false);
    expect(opened.output).toContain("Served inside the computer");
    expect(opened.output).toContain("waiting for a click");
    const clicked = await browser({
      action: "click",
      ref: refOf(opened.output, /button "Press me"/),
    });
    expect(clicked.output).toContain("the button was clicked");
    const typed = await browser({
      action: "type",
      ref: refOf(clicked.output, /textbox "Your name"/),
      text: "Grace",
      submit: true,
    });
    expect(typed.output).toContain("hello Grace");
    // The bot's screen has a VNC server on the computer's loopback only (SCR3).
    const listening = await tool("$ ss -ltnH | awk '{print $4}' | grep ':59[0-9][0-9]$'");
    expect(listening.output).toContain("127.0.0.1:5910");
    expect(listening.output).not.toMatch(/(0\.0\.0\.0|\*|\[::\]):59/);
  }, 240_000);

  it("a screenshot reaches the model (the fake OpenAI server) as an image part", async () => {
    const before = fake.requests.length;
    const shot = await browser({ action: "screenshot" });
    expect(shot.isError, shot.output).toBe(false);
    const images = fake.requests
      .slice(before)
      .flatMap((request) =>
        (request.body?.messages ?? []).flatMap((message) =>
          Array.isArray(message.content)
            ? (message.content as { type: string; image_url?: { url: string } }[]).filter(
                (part) => part.type === "image_url",
              )
            : [],
        ),
      );
    expect(images.length).toBeGreaterThan(0);
    expect(images[0]!.image_url!.url).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
  }, 120_000);

  it("a screenshot, a download and (with the bot's recording on) a recording become the conversation's attachments", async () => {
    const patch = (browserRecording: boolean) =>
      rawRequest(`${roost.url}/v1/bots/${botId}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${roost.token()}`, "content-type": "application/json" },
        body: JSON.stringify({ browserRecording }),
      });
    expect((await patch(true)).status).toBe(200);
    try {
      const page = await browser({
        action: "navigate",
        url: "http://127.0.0.1:8000/download.html",
      });
      expect(page.isError, page.output).toBe(false);
      const clicked = await browser({
        action: "click",
        ref: refOf(page.output, /link "Get the report"/),
      });
      expect(clicked.isError, clicked.output).toBe(false);
      const shot = await browser({ action: "screenshot" });
      expect(shot.isError, shot.output).toBe(false);
    } finally {
      expect((await patch(false)).status).toBe(200);
    }
    const listed = await rawRequest(`${roost.url}/v1/conversations/${conversationId}/attachments`, {
      headers: { authorization: `Bearer ${roost.token()}` },
    });
    expect(listed.status, listed.text).toBe(200);
    const { attachments } = JSON.parse(listed.text) as {
      attachments: { id: string; kind: string; name: string; size: number }[];
    };
    const kinds = new Set(attachments.map((attachment) => attachment.kind));
    expect([...kinds].sort()).toEqual(
      expect.arrayContaining(["download", "recording", "screenshot"]),
    );
    const report = attachments.find((attachment) => attachment.kind === "download")!;
    expect(report.name).toBe("report.txt");
    const body = await rawRequest(
      `${roost.url}/v1/conversations/${conversationId}/attachments/${report.id}`,
      { headers: { authorization: `Bearer ${roost.token()}` } },
    );
    expect(body.text).toBe("quarterly numbers: 42\n");
  }, 240_000);

  it("the live view of the bot's real screen: listed, its VNC WebSocket answers RFB, control makes the bot wait, hand-back frees it", async () => {
    const opened = await browser({ action: "navigate", url: "http://127.0.0.1:8000/index.html" });
    expect(opened.isError, opened.output).toBe(false);
    const auth = { authorization: `Bearer ${roost.token()}`, "content-type": "application/json" };
    const listed = await rawRequest(`${roost.url}/v1/computers/me/screens`, { headers: auth });
    expect(listed.status, listed.text).toBe(200);
    const { screens } = JSON.parse(listed.text) as {
      screens: { id: string; botId: string; width: number; busy: boolean }[];
    };
    const screen = screens.find((entry) => entry.botId === botId)!;
    expect(screen).toMatchObject({ id: `s-${botId}`, width: 1280, busy: false });

    // The WebSocket reaches the screen's x11vnc through the worker's tunnel.
    const socket = new WebSocket(
      `${roost.url.replace("http", "ws")}/v1/computers/me/screens/${screen.id}/vnc`,
      { headers: { authorization: `Bearer ${roost.token()}` } },
    );
    try {
      const banner = await new Promise<string>((resolve, reject) => {
        socket.once("message", (data: Buffer) => resolve(data.subarray(0, 12).toString("latin1")));
        socket.once("error", reject);
      });
      expect(banner).toBe("RFB 003.008\n");
    } finally {
      socket.close();
    }

    // A person takes control: the bot's browser call waits its turn, with the exact sentence.
    const viewer = await rawRequest(`${roost.url}/v1/computers/me/screens/${screen.id}/viewers`, {
      method: "POST",
      headers: auth,
    });
    expect(viewer.status, viewer.text).toBe(201);
    const { viewerId } = JSON.parse(viewer.text) as { viewerId: string };
    const control = await rawRequest(`${roost.url}/v1/computers/me/screens/${screen.id}/control`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ viewerId }),
    });
    expect(control.status, control.text).toBe(200);
    const blocked = await browser({ action: "snapshot" });
    expect(blocked.isError).toBe(true);
    expect(blocked.output).toContain("A person is using this screen");
    const handBack = await rawRequest(`${roost.url}/v1/computers/me/screens/${screen.id}/control`, {
      method: "DELETE",
      headers: auth,
    });
    expect([200, 204]).toContain(handBack.status);
    // The bot is told (HOF4): one message from the live view, which its loop answers.
    const isNotice = (step: { kind: string; payload: Record<string, unknown> }) =>
      step.kind === "message" &&
      (step.payload.source as { kind?: string } | undefined)?.kind === "screen";
    const told = await waitFor(
      async () => {
        const steps = await api.steps(conversationId);
        const at = steps.findIndex(isNotice);
        return at !== -1 && steps.slice(at).some((step) => step.kind === "reply")
          ? steps
          : undefined;
      },
      { what: "the hand-back notice and the bot's answer to it", timeoutMs: 60_000 },
    );
    const notices = told.filter(isNotice);
    expect(notices).toHaveLength(1);
    expect(notices[0]!.payload.text).toContain("handed your screen back");
    const free = await browser({ action: "snapshot" });
    expect(free.isError, free.output).toBe(false);
    expect(free.output).toContain("Served inside the computer");
  }, 240_000);

  it("the browser's traffic obeys the egress policy: a denied host shows the proxy's refusal, an allowed one loads", async () => {
    const target = `http://${outside.address}:8080/`;
    const denied = await browser({ action: "navigate", url: target });
    expect(denied.output).not.toContain("hello from outside");
    // The proxy's own refusal page (E3), as the browser loaded it.
    expect(denied.output).toContain("The server answered 403");
    expect(denied.output).toContain("roost egress");
    await api.call("PUT", "/v1/computers/me/network-policy", {
      policy: { mode: "allowlist-only", allow: [`${outside.address}:8080`] },
    });
    const allowed = await browser({ action: "navigate", url: target });
    expect(allowed.output).toContain("hello from outside");
    await api.call("PUT", "/v1/computers/me/network-policy", { policy: { mode: "none" } });
    const deniedAgain = await browser({ action: "navigate", url: `${target}?again` });
    expect(deniedAgain.output).not.toContain("hello from outside");
  }, 240_000);

  it("file: URLs are refused by the tool, and a page cannot open one either (attack)", async () => {
    const refused = await browser({ action: "navigate", url: "file:///etc/passwd" });
    expect(refused.isError).toBe(true);
    expect(refused.output).toMatch(/http:\/\/ or https:\/\//);
    await upload(
      "/workspace/site/file-link.html",
      `<!doctype html><title>Link</title><a href="file:///etc/passwd">local file</a>`,
    );
    const page = await browser({ action: "navigate", url: "http://127.0.0.1:8000/file-link.html" });
    const clicked = await browser({
      action: "click",
      ref: refOf(page.output, /link "local file"/),
    });
    expect(clicked.output).not.toContain("root:x:0:0");
    expect(clicked.output).toContain("Page URL: http://127.0.0.1:8000/file-link.html");
  }, 120_000);

  it("computer tool inside the computer: a screenshot of the whole screen, and typing with xdotool reaches the page", async () => {
    await upload(
      "/workspace/site/keys.html",
      `<!doctype html><title>Keys</title><p id="keys">keys:</p><script>document.addEventListener("keydown", (event) => { document.getElementById("keys").textContent += event.key; });</script>`,
    );
    await browser({ action: "navigate", url: "http://127.0.0.1:8000/keys.html" });
    const shot = await tool(`computer ${JSON.stringify({ action: "screenshot" })}`);
    expect(shot.isError, shot.output).toBe(false);
    expect(shot.output).toContain("1280x800");
    // A click in the page (below Chromium's toolbar) gives it the keyboard.
    await tool(`computer ${JSON.stringify({ action: "click", x: 640, y: 500 })}`);
    const typed = await tool(`computer ${JSON.stringify({ action: "type", text: "xdo" })}`);
    expect(typed.isError, typed.output).toBe(false);
    const read = await browser({ action: "snapshot" });
    expect(read.output).toContain("keys:xdo");
  }, 120_000);

  it("with every screen taken, another bot of the account gets exactly the busy sentence", async () => {
    const other = (await api.createConversation((await api.createBot("second")).id)).id;
    const refused = await tool(`browser ${JSON.stringify({ action: "snapshot" })}`, other);
    expect(refused.isError).toBe(true);
    expect(refused.output).toContain(
      "All screens on the shared computer are in use. Try again in a moment.",
    );
  }, 120_000);

  it("the browser cannot reach Roost's own API on the host: the computer's loopback is its own (attack)", async () => {
    const probe = await browser({
      action: "navigate",
      url: `http://127.0.0.1:${roost.ports.api}/auth/local`,
    });
    expect(probe.isError).toBe(true);
    expect(probe.output).toMatch(/ERR_CONNECTION_REFUSED/);
  }, 120_000);

  it("a cookie set by a page survives sleep and wake", async () => {
    const set = await browser({ action: "navigate", url: "http://127.0.0.1:8000/set-cookie.html" });
    expect(set.output).toContain("cookie set");
    expect((await api.sleepComputer()).state).toBe("asleep");
    await serveSite(); // wakes the computer (shell), and the site is served again
    const shown = await browser({
      action: "navigate",
      url: "http://127.0.0.1:8000/show-cookie.html",
    });
    expect(shown.output).toContain("roost_login=kept-across-sleep");
  }, 240_000);
});
