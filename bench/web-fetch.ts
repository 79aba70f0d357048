/**
 * web_fetch of a local page (docs/web-tools.md): the server tool's whole path in-process — the
 * tool router, the egress checks of every hop (WF1), the connection to the checked address, the
 * body read and capped, HTML to Markdown (turndown), the untrusted block — against a page served
 * on 127.0.0.1 (the test resolver names a public address and the connection is routed to the local
 * server, since the real checks refuse loopback). Compare with waking a computer to the first tool
 * result (docs/computers.md: 188–216 ms p50 for a local copy; `node bench/wake.ts 10 local`).
 * Run: `node bench/web-fetch.ts [fetches=200] [pageKiB=40]`
 */
import { createServer } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { createDestinationContext } from "../src/egress/index.ts";
import { createMemoryDurable } from "../src/engine/testing/index.ts";
import { createToolRouter } from "../src/tools/index.ts";
import { createWebFetcher, createWebTools } from "../src/webtools/index.ts";
import { summarize } from "./support.ts";

const fetches = Number(process.argv[2] ?? 200);
const pageKiB = Number(process.argv[3] ?? 40);

const paragraph =
  '<p>Roost runs <a href="/agents">always-on agents</a> on the server, with <em>durable</em> turns and a <code>sandboxed</code> computer per user.</p>\n';
const page = `<!doctype html><html><head><title>Bench page</title><style>body{font:16px sans-serif}</style><script>var x = 1;</script></head><body><h1>Bench</h1>${paragraph.repeat(Math.ceil((pageKiB * 1024) / paragraph.length))}<ul><li>one</li><li>two</li></ul></body></html>`;
const server = createServer((_request, response) => {
  response.setHeader("content-type", "text/html; charset=utf-8");
  response.end(page);
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = (server.address() as AddressInfo).port;

const fetcher = createWebFetcher({
  destination: createDestinationContext({}),
  resolve: async () => ["93.184.215.14"],
  connect: (_address, _port) => connect(port, "127.0.0.1"),
});
const router = createToolRouter({
  sources: [
    createWebTools({
      fetcher,
      policyFor: async () => ({
        mode: "defaults-and-allowlist",
        allow: ["bench.example"],
        deny: [],
      }),
    }),
  ],
});
const turn = { accountId: "a", botId: "b", conversationId: "c", turnId: "t" };
await router.specs(turn);

const once = async (index: number) => {
  const started = performance.now();
  const result = await router.execute(
    "web_fetch",
    { url: "http://bench.example/page" },
    {
      ...turn,
      callId: `call_${index}`,
      durable: createMemoryDurable(),
      signal: new AbortController().signal,
    },
  );
  if (result.isError) throw new Error(result.output);
  return { ms: performance.now() - started, chars: result.output.length };
};

for (let index = 0; index < 10; index += 1) await once(-index - 1); // warm up
const samples: number[] = [];
let chars = 0;
for (let index = 0; index < fetches; index += 1) {
  const { ms, chars: length } = await once(index);
  samples.push(ms);
  chars = length;
}
console.log(
  `page: ${(Buffer.byteLength(page) / 1024).toFixed(1)} KiB of HTML → ${chars} characters for the model`,
);
console.log(summarize("web_fetch of a local page (router to result)", samples));
server.close();
