/**
 * The local provider in a process of its own, driven over stdin and stdout (one JSON object a
 * line), so that a test running as root can use it as a user that is not root (the unprivileged
 * mode: unprivileged.test.ts). Each computer gets a stand-in gateway of its own, so a tool call
 * reaches that computer's worker. Not used by production code.
 *
 *   node unprivileged-harness.ts DATA_DIR
 *   → {"id":1,"op":"create","computerId":"a"}       ← {"id":1,"ok":true,"value":…}
 *   ops: create, wake, sleep, destroy, exec (argv), call (tool, input), info, usage, close
 *   The first line out is {"ready":true,"isolation":…,"pid":…}.
 */
import { createInterface } from "node:readline";
import { createLocalProvider } from "../local-provider.ts";
import { startTestGateway, type TestGateway } from "./index.ts";

interface Request {
  id: number;
  op: string;
  computerId?: string;
  argv?: string[];
  tool?: string;
  input?: unknown;
}

const dataDir = process.argv[2];
if (dataDir === undefined) {
  process.stderr.write("usage: unprivileged-harness.ts DATA_DIR\n");
  process.exit(2);
}
const gateways = new Map<string, TestGateway>();
const gatewayOf = async (computerId: string) => {
  let gateway = gateways.get(computerId);
  if (gateway === undefined) {
    gateway = await startTestGateway();
    gateways.set(computerId, gateway);
  }
  return gateway;
};
const exits: string[] = [];
const provider = await createLocalProvider({
  dataDir,
  sockets: {
    gateway: async (computerId, socketPath) =>
      (await gatewayOf(computerId)).listenComputer(computerId, socketPath),
  },
  onExit: (computerId, detail) => exits.push(`${computerId}: ${detail}`),
});
const write = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
write({ ready: true, isolation: provider.isolation, pid: process.pid });

async function handle(request: Request): Promise<unknown> {
  const id = request.computerId ?? "";
  switch (request.op) {
    case "create":
      return provider.create(id);
    case "wake": {
      const gateway = await gatewayOf(id);
      const before = gateway.hellos;
      await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "t" });
      await gateway.waitForHello(before + 1, 30_000);
      return null;
    }
    case "sleep":
      return provider.sleep(id);
    case "destroy":
      return provider.destroy(id);
    case "exec":
      return provider.exec(id, request.argv ?? [], { timeoutMs: 20_000 });
    case "call":
      return (await gatewayOf(id)).call(request.tool ?? "", request.input, 20_000);
    case "info":
      return provider.info(id) ?? null;
    case "usage":
      return (await provider.usage(id)) ?? null;
    case "exits":
      return exits;
    case "close":
      await provider.close();
      await Promise.all([...gateways.values()].map((gateway) => gateway.close()));
      return null;
    default:
      throw new Error(`unknown op ${request.op}`);
  }
}

const lines = createInterface({ input: process.stdin });
let queue = Promise.resolve();
lines.on("line", (line) => {
  const request = JSON.parse(line) as Request;
  queue = queue.then(async () => {
    try {
      write({ id: request.id, ok: true, value: (await handle(request)) ?? null });
    } catch (error) {
      write({ id: request.id, ok: false, error: (error as Error).message });
    }
    if (request.op === "close") process.exit(0);
  });
});
lines.on("close", () => {
  void queue.then(async () => {
    await provider.close().catch(() => undefined);
    process.exit(0);
  });
});
