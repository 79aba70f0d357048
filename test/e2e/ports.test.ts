/**
 * Port previews end to end, against a real Roost with real computers: the `local` provider (as
 * root: each computer in its own network namespace holding only loopback, its worker opening the
 * tunnels inside it) and the `process` provider (no isolation: every computer's loopback is the
 * host's, so the cross-account test runs for `local` only). Servers are started inside the
 * computer the way a bot starts them, through the shell tool.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { skipReason } from "../../src/computers/local/testing/index.ts";
import { findFreePort } from "../../src/engine/index.ts";
import { apiClient } from "../support/api-client.ts";
import { rawRequest } from "../support/raw-http.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

const providers = [
  { name: "local", skip: await skipReason("test/e2e/ports.test.ts (local provider)") },
  { name: "process", skip: undefined },
] as const;

/** A server for inside the computer, node's standard library only: headers, SSE, WebSocket echo. */
const serverScript = String.raw`
import http from "node:http";
import { createHash } from "node:crypto";
const port = Number(process.argv[2]);
const releases = [];
const server = http.createServer((request, response) => {
  if (request.url === "/headers") {
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify({ url: request.url, headers: request.headers }));
  } else if (request.url === "/sse") {
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    response.write("data: first\n\n");
    releases.push(() => response.end("data: second\n\n"));
  } else if (request.url === "/release") {
    for (const release of releases.splice(0)) release();
    response.end("released");
  } else {
    response.statusCode = 404;
    response.end("not here");
  }
});
server.on("upgrade", (request, socket) => {
  const accept = createHash("sha1")
    .update(request.headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
    .digest("base64");
  socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n");
  const send = (text) => {
    const payload = Buffer.from(text);
    socket.write(Buffer.concat([Buffer.from([0x81, payload.length]), payload]));
  };
  send("hello from inside, authorization=" + (request.headers.authorization ?? "none"));
  let buffer = Buffer.alloc(0);
  socket.on("data", (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    while (buffer.length >= 6) {
      const opcode = buffer[0] & 0x0f;
      const length = buffer[1] & 0x7f;
      if (buffer.length < 6 + length) return;
      const mask = buffer.subarray(2, 6);
      const payload = Buffer.from(buffer.subarray(6, 6 + length));
      for (let index = 0; index < payload.length; index++) payload[index] ^= mask[index % 4];
      buffer = buffer.subarray(6 + length);
      if (opcode === 8) return socket.end();
      if (opcode === 1) send("echo: " + payload.toString());
    }
  });
  socket.on("error", () => {});
});
server.listen(port, "127.0.0.1");
`;

for (const provider of providers) {
  describe.skipIf(provider.skip !== undefined)(
    `port previews end to end (${provider.name} provider)`,
    () => {
      let dataDir: string;
      let roost: RoostProcess;
      let alice: ReturnType<typeof apiClient>;
      let bob: ReturnType<typeof apiClient>;
      let bobToken: string;
      let aliceConversation: string;
      let bobConversation: string;
      /** Ports inside the computers; with `process` they are the host's, so free ones. */
      let pythonPort: number;
      let nodePort: number;
      let bobPort: number;
      let bigSha256: string;

      /** Runs a shell command on a computer through a bot turn (the demo model's `$ …` and `bg …`). */
      async function turn(
        client: ReturnType<typeof apiClient>,
        conversationId: string,
        text: string,
      ): Promise<{ exitCode?: number; stdout?: string }> {
        const before = (await client.steps(conversationId)).filter(
          (step) => step.kind === "reply",
        ).length;
        await client.send(conversationId, text);
        const steps = await client.waitForSteps(conversationId, "reply", before + 1, 90_000);
        const tool = steps.filter((step) => step.kind === "tool").at(-1)!;
        expect(tool.payload.isError, JSON.stringify(tool.payload)).toBe(false);
        return tool.payload.details as { exitCode?: number; stdout?: string };
      }
      const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
      const preview = (token: string, port: number, path: string) =>
        rawRequest(`${roost.url}/v1/computers/me/ports/${port}${path}`, {
          headers: bearer(token),
        });
      const listed = async (token: string) =>
        (
          (await rawRequest(`${roost.url}/v1/computers/me/ports`, { headers: bearer(token) })).json
            .ports as { port: number }[] | undefined
        )?.map((entry) => entry.port) ?? [];
      async function link(token: string, port: number) {
        const answer = await rawRequest(`${roost.url}/v1/computers/me/preview-links`, {
          method: "POST",
          headers: { ...bearer(token), "content-type": "application/json" },
          body: JSON.stringify({ port }),
        });
        expect(answer.status, answer.text).toBe(201);
        const url = new URL(String(answer.json.url));
        return { host: url.host, target: `${url.pathname}${url.search}` };
      }
      async function openLink(token: string, port: number) {
        const { host, target } = await link(token, port);
        const opened = await rawRequest(`${roost.url}${target}`, { headers: { host } });
        expect(opened.status, opened.text).toBe(303);
        return { host, cookie: String(opened.headers["set-cookie"]?.[0]).split(";")[0]! };
      }

      beforeAll(async () => {
        dataDir = mkdtempSync(join(tmpdir(), `roost-e2e-ports-${provider.name}-`));
        roost = await createRoostProcess({
          dataDir,
          env: {
            ROOST_COMPUTER_PROVIDER: provider.name,
            ROOST_FOLLOW_UP_WINDOW_MS: "200",
            ROOST_PREVIEW_MAX_CONNECTIONS: "4",
            ROOST_PREVIEW_LINK_TTL_MS: "10000",
          },
        });
        await roost.start();
        alice = apiClient(roost.url, roost.token);
        const created = await alice.call<{ token: string }>("POST", "/v1/accounts", {
          name: "bob",
        });
        bobToken = created.token;
        bob = apiClient(roost.url, () => bobToken);
        aliceConversation = (await alice.createConversation((await alice.createBot("a")).id)).id;
        bobConversation = (await bob.createConversation((await bob.createBot("b")).id)).id;
        if (provider.name === "local") {
          // Each computer has a loopback of its own: the same numbers in both.
          [pythonPort, nodePort, bobPort] = [8000, 8080, 8001];
        } else {
          const taken = [roost.ports.api, roost.ports.ingress, roost.ports.admin];
          pythonPort = await findFreePort(taken);
          nodePort = await findFreePort([...taken, pythonPort]);
          bobPort = await findFreePort([...taken, pythonPort, nodePort]);
        }
        // The servers, started as a bot starts them.
        const made = await turn(
          alice,
          aliceConversation,
          "$ mkdir -p site && echo hello > site/small.txt && head -c 20971520 /dev/urandom > site/big.bin && sha256sum site/big.bin",
        );
        bigSha256 = String(made.stdout).split(" ")[0]!;
        const upload = await rawRequest(
          `${roost.url}/v1/computers/me/files/content?path=/workspace/server.mjs`,
          { method: "PUT", headers: bearer(roost.token()), body: serverScript },
        );
        expect(upload.status, upload.text).toBe(201);
        await turn(
          alice,
          aliceConversation,
          `bg cd site && exec python3 -m http.server ${pythonPort} --bind 127.0.0.1`,
        );
        await turn(alice, aliceConversation, `bg exec node server.mjs ${nodePort}`);
        await waitFor(
          async () => {
            const ports = await listed(roost.token());
            return ports.includes(pythonPort) && ports.includes(nodePort);
          },
          { timeoutMs: 30_000, what: "both servers to listen inside the computer" },
        );
      }, 180_000);
      afterAll(async () => {
        await roost?.stop();
        rmSync(dataDir, { recursive: true, force: true });
      });

      it("python3 -m http.server inside the computer is fetched by its owner: a small file, and a 20 MB file whole and in order", async () => {
        const small = await preview(roost.token(), pythonPort, "/small.txt");
        expect(small.status).toBe(200);
        expect(small.text).toBe("hello\n");
        const big = await new Promise<{ size: number; sha256: string }>((resolve, reject) => {
          http
            .get(
              `${roost.url}/v1/computers/me/ports/${pythonPort}/big.bin`,
              { headers: bearer(roost.token()) },
              (response) => {
                expect(response.statusCode).toBe(200);
                const hash = createHash("sha256");
                let size = 0;
                response.on("data", (chunk: Buffer) => {
                  hash.update(chunk);
                  size += chunk.length;
                });
                response.on("end", () => resolve({ size, sha256: hash.digest("hex") }));
                response.on("error", reject);
              },
            )
            .on("error", reject);
        });
        expect(big).toEqual({ size: 20 * 1024 * 1024, sha256: bigSha256 });
      });

      it("the user's bearer token never reaches the server inside (it echoes the headers it got)", async () => {
        const answer = await preview(roost.token(), nodePort, "/headers");
        expect(answer.status, answer.text).toBe(200);
        const headers = (answer.json as { headers: Record<string, string> }).headers;
        expect(headers.authorization).toBeUndefined();
        expect(answer.text).not.toContain(roost.token());
        const { host, cookie } = await openLink(roost.token(), nodePort);
        const viaLink = await rawRequest(`${roost.url}/headers`, {
          headers: { host, cookie: `${cookie}; theirs=1` },
        });
        expect(viaLink.status, viaLink.text).toBe(200);
        expect((viaLink.json as { headers: Record<string, string> }).headers.cookie).toBe(
          "theirs=1",
        );
        expect(viaLink.text).not.toContain(cookie.split("=")[1]);
      });

      // Only where computers have loopbacks of their own: with `process` every computer's
      // loopback is the host's, so another account's worker reaches the same server (no isolation).
      it.skipIf(provider.name !== "local")(
        "another account gets 404 for the same URL: its own computer has nothing on that port",
        async () => {
          await bob.call("POST", "/v1/computers/me/wake");
          const answer = await preview(bobToken, pythonPort, "/small.txt");
          expect(answer.status, answer.text).toBe(404);
          expect(answer.json.error?.code).toBe("not_found");
          expect(answer.text).not.toContain("hello");
          // And alice's preview host does not take bob's session, nor no session at all.
          const alicesLink = await link(roost.token(), pythonPort);
          const bobs = await openLink(bobToken, pythonPort);
          const attempts: Record<string, string>[] = [
            { cookie: bobs.cookie },
            {},
            bearer(bobToken),
          ];
          for (const headers of attempts) {
            const refused = await rawRequest(`${roost.url}/small.txt`, {
              headers: { host: alicesLink.host, ...headers },
            });
            expect(refused.status, JSON.stringify(headers)).toBe(401);
          }
        },
      );

      it("a signed link works without a bearer header; a tampered one does not, nor an expired one", async () => {
        const { host, target } = await link(roost.token(), pythonPort);
        const tampered = target.replace(/.$/, (last) => (last === "A" ? "B" : "A"));
        expect((await rawRequest(`${roost.url}${tampered}`, { headers: { host } })).status).toBe(
          401,
        );
        const opened = await rawRequest(`${roost.url}${target}`, { headers: { host } });
        expect(opened.status).toBe(303);
        const cookie = String(opened.headers["set-cookie"]?.[0]).split(";")[0]!;
        const page = await rawRequest(`${roost.url}/small.txt`, { headers: { host, cookie } });
        expect(page.status).toBe(200);
        expect(page.text).toBe("hello\n");
        // The link lives 10 s here (ROOST_PREVIEW_LINK_TTL_MS); then it opens nothing.
        await waitFor(
          async () =>
            (await rawRequest(`${roost.url}${target}`, { headers: { host } })).status === 401,
          { timeoutMs: 30_000, intervalMs: 500, what: "the link to expire" },
        );
        // The session it opened lasts longer.
        expect(
          (await rawRequest(`${roost.url}/small.txt`, { headers: { host, cookie } })).status,
        ).toBe(200);
      });

      it("a WebSocket echo server inside works through the preview: messages both ways", async () => {
        const { host, cookie } = await openLink(roost.token(), nodePort);
        const sockets = [
          new WebSocket(`${roost.url.replace("http", "ws")}/v1/computers/me/ports/${nodePort}/ws`, {
            headers: bearer(roost.token()),
          }),
          new WebSocket(`${roost.url.replace("http", "ws")}/ws`, {
            headers: { host, cookie },
            origin: `http://${host}`,
          }),
        ];
        // Listening from the start: the server greets as soon as the upgrade is done.
        const received = sockets.map((ws) => {
          const messages: string[] = [];
          ws.on("message", (data: Buffer) => messages.push(data.toString()));
          return messages;
        });
        try {
          for (const [index, ws] of sockets.entries()) {
            const messages = received[index]!;
            await new Promise<void>((resolve, reject) => {
              if (ws.readyState === WebSocket.OPEN) return resolve();
              ws.once("open", resolve);
              ws.once("error", reject);
            });
            await waitFor(() => messages.length === 1, { what: "the server's greeting" });
            ws.send("one");
            ws.send("two");
            await waitFor(() => messages.length === 3, { what: "two echoes" });
            expect(messages).toEqual([
              "hello from inside, authorization=none",
              "echo: one",
              "echo: two",
            ]);
          }
        } finally {
          await Promise.all(
            sockets.map(
              (ws) =>
                new Promise<void>((resolve) => {
                  if (ws.readyState === WebSocket.CLOSED) return resolve();
                  ws.once("close", () => resolve());
                  ws.close();
                }),
            ),
          );
        }
      });

      it("an event stream inside delivers its first event before the stream ends", async () => {
        const received: string[] = [];
        const ended = new Promise<void>((resolve, reject) => {
          http
            .get(
              `${roost.url}/v1/computers/me/ports/${nodePort}/sse`,
              { headers: bearer(roost.token()) },
              (response) => {
                response.on("data", (chunk: Buffer) => {
                  received.push(chunk.toString());
                  // Only once the first event is here is the server told to send the second.
                  if (received.length === 1)
                    void preview(roost.token(), nodePort, "/release").catch(reject);
                });
                response.on("end", () => resolve());
              },
            )
            .on("error", reject);
        });
        await ended;
        expect(received[0]).toBe("data: first\n\n");
        expect(received.join("")).toBe("data: first\n\ndata: second\n\n");
      });

      it("flood: one account's previews beyond the limit are refused, and another account's keep working", async () => {
        await bob.call("POST", "/v1/computers/me/wake");
        await turn(
          bob,
          bobConversation,
          `bg mkdir -p mine && echo bob > mine/index.txt && cd mine && exec python3 -m http.server ${bobPort} --bind 127.0.0.1`,
        );
        await waitFor(async () => (await listed(bobToken)).includes(bobPort), {
          timeoutMs: 30_000,
          what: "bob's server to listen",
        });
        const held: http.ClientRequest[] = [];
        try {
          // Four event streams stay open (ROOST_PREVIEW_MAX_CONNECTIONS=4); more are refused.
          for (let index = 0; index < 4; index++) {
            await new Promise<void>((resolve, reject) => {
              const request = http.get(
                `${roost.url}/v1/computers/me/ports/${nodePort}/sse`,
                { headers: bearer(roost.token()) },
                (response) =>
                  response.statusCode === 200
                    ? resolve()
                    : reject(new Error(String(response.statusCode))),
              );
              request.on("error", () => undefined);
              held.push(request);
            });
          }
          const floods = await Promise.all(
            Array.from({ length: 20 }, () => preview(roost.token(), pythonPort, "/small.txt")),
          );
          expect(floods.every((answer) => answer.status === 429)).toBe(true);
          expect(floods[0]!.json.error?.message).toMatch(/4 preview connections open, its limit/);
          const bobs = await preview(bobToken, bobPort, "/index.txt");
          expect(bobs.status).toBe(200);
          expect(bobs.text).toBe("bob\n");
        } finally {
          for (const request of held) request.destroy();
        }
        await waitFor(
          async () => (await preview(roost.token(), pythonPort, "/small.txt")).status === 200,
          {
            what: "alice's previews to work again once her streams closed",
          },
        );
      });

      it("GET /v1/computers/me/ports lists the python server's port while it runs and not after it stops", async () => {
        expect(await listed(roost.token())).toContain(pythonPort);
        await turn(
          alice,
          aliceConversation,
          `$ pkill -f "http.serve[r] ${pythonPort}"; echo stopped`,
        );
        await waitFor(async () => !(await listed(roost.token())).includes(pythonPort), {
          what: "the port to leave the list",
        });
        expect(await listed(roost.token())).toContain(nodePort);
        const gone = await preview(roost.token(), pythonPort, "/small.txt");
        expect(gone.status).toBe(404);
      });

      it("a sleeping computer answers 409 computer_asleep, and the preview does not wake it", async () => {
        await alice.call("POST", "/v1/computers/me/sleep");
        const answer = await preview(roost.token(), nodePort, "/headers");
        expect(answer.status).toBe(409);
        expect(answer.json.error?.code).toBe("computer_asleep");
        expect(answer.json.error?.message).toMatch(
          new RegExp(`the computer is asleep; nothing listens on port ${nodePort}\\. Wake it`),
        );
        expect((await alice.call<{ state: string }>("GET", "/v1/computers/me")).state).toBe(
          "asleep",
        );
      });
    },
  );
}
