/**
 * The owner's webhooks against a real HTTP server on 127.0.0.1. Roost never posts to loopback
 * (OWH1), so the tests name public addresses that the test's dialer routes to 127.0.0.1, as the
 * egress proxy's tests do.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createDestinationContext } from "../egress/index.ts";
import { isRoostError } from "../errors/index.ts";
import { createOwnerWebhookClient, refusalOf, signature } from "./webhook.ts";

const publicA = "93.184.216.34";
const platformPort = 7700;

interface Received {
  headers: IncomingMessage["headers"];
  body: string;
  path: string;
}

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) =>
    server === undefined ? resolve() : server.close(() => resolve()),
  );
  server = undefined;
});

async function startEndpoint(status = 200, location?: string) {
  const received: Received[] = [];
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      received.push({ headers: request.headers, body, path: request.url ?? "" });
      response.writeHead(status, location === undefined ? {} : { location });
      response.end("ok");
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { received, port: (server.address() as AddressInfo).port };
}

function client(names: Record<string, string[]>, dialed: string[] = []) {
  return createOwnerWebhookClient({
    destination: createDestinationContext({
      hostAddresses: () => ["127.0.0.1", "10.9.9.9"],
      allowPrivate: ["10.20.0.0/16"],
      platformPorts: () => [platformPort],
    }),
    resolve: async (host) => {
      const addresses = names[host];
      if (addresses === undefined) throw new Error(`ENOTFOUND ${host}`);
      return addresses;
    },
    // Public test addresses go to the local endpoint; the address asked for is recorded (OWH2).
    connect: (address, port) => {
      dialed.push(address);
      return connect(port, address === publicA ? "127.0.0.1" : address);
    },
    timeoutMs: 2000,
  });
}

const refusedUrl = (url: string) => {
  try {
    client({}).checkUrl(url);
  } catch (error) {
    return isRoostError(error) && error.code === "invalid_request" ? error.message : "other error";
  }
  return undefined;
};

describe("owner webhooks", () => {
  it("posts the JSON body signed with the secret, with the delivery id", async () => {
    const { received, port } = await startEndpoint();
    const outcome = await client({ "hooks.example.com": [publicA] }).post({
      url: `http://hooks.example.com:${port}/roost?x=1`,
      secret: "whsec_test",
      deliveryId: "acct_1:n1",
      body: { hello: "world" },
    });
    expect(outcome).toEqual({ ok: true, status: 200 });
    expect(received).toHaveLength(1);
    const [request] = received;
    expect(request?.path).toBe("/roost?x=1");
    expect(request?.body).toBe('{"hello":"world"}');
    expect(request?.headers["x-roost-delivery"]).toBe("acct_1:n1");
    expect(request?.headers["x-roost-signature"]).toBe(
      signature("whsec_test", '{"hello":"world"}'),
    ); // OWH4
  });

  it("OWH1 attack: URLs of loopback, link-local, metadata, the host, private ranges and credentials are refused when set", () => {
    for (const url of [
      "http://127.0.0.1/hook",
      "http://[::1]/hook",
      "http://[::ffff:127.0.0.1]/hook",
      "http://localhost/hook",
      "http://app.localhost/hook",
      "http://169.254.169.254/latest/meta-data",
      "http://0.0.0.0/hook",
      "http://10.9.9.9/hook",
      "http://192.168.1.10/hook",
      "http://user:pass@example.com/hook",
      "ftp://example.com/hook",
      "not a url",
      `http://10.20.1.1:${platformPort}/hook`,
    ])
      expect(refusedUrl(url), url).toEqual(expect.stringContaining('field "url"'));
    expect(refusedUrl("https://hooks.example.com/roost")).toBeUndefined();
    // A private range the operator opened (ROOST_EGRESS_ALLOW_PRIVATE) is reachable, as for computers.
    expect(refusedUrl("http://10.20.1.1:8080/hook")).toBeUndefined();
  });

  it("OWH1 attack: a name that resolves to loopback, link-local or Roost's own port is not posted to", async () => {
    const { received, port } = await startEndpoint();
    const dialed: string[] = [];
    const names = {
      "rebind.example.com": ["127.0.0.1"],
      "mixed.example.com": [publicA, "169.254.169.254"],
      "private.example.com": ["10.20.0.5"],
    };
    const webhooks = client(names, dialed);
    const post = (url: string) => webhooks.post({ url, secret: "s", deliveryId: "d", body: {} });
    const loopback = await post(`http://rebind.example.com:${port}/`);
    expect(loopback).toMatchObject({ ok: false, retryable: false });
    expect(!loopback.ok && loopback.error).toContain(
      "resolves to 127.0.0.1 is an address of the Roost host itself",
    );
    const mixed = await post(`http://mixed.example.com:${port}/`);
    expect(!mixed.ok && mixed.error).toContain("169.254.169.254 is a link-local address");
    const ownPort = await post(`http://private.example.com:${platformPort}/`);
    expect(!ownPort.ok && ownPort.error).toContain("one of Roost's own ports");
    expect(dialed).toEqual([]);
    expect(received).toEqual([]);
  });

  it("OWH2: the connection goes to the address that was checked (no second lookup)", async () => {
    const { received, port } = await startEndpoint();
    const dialed: string[] = [];
    let lookups = 0;
    const webhooks = createOwnerWebhookClient({
      destination: createDestinationContext({ hostAddresses: () => [], platformPorts: () => [] }),
      // A rebinding name: public for the check, loopback for any later lookup.
      resolve: async () => (lookups++ === 0 ? [publicA] : ["127.0.0.1"]),
      connect: (address, targetPort) => {
        dialed.push(address);
        return connect(targetPort, address === publicA ? "127.0.0.1" : address);
      },
    });
    const outcome = await webhooks.post({
      url: `http://rebind.example.com:${port}/`,
      secret: "s",
      deliveryId: "d",
      body: {},
    });
    expect(outcome.ok).toBe(true);
    expect(lookups).toBe(1);
    expect(dialed).toEqual([publicA]);
    expect(received).toHaveLength(1);
  });

  it("OWH3: a redirect is not followed; 4xx is final, 5xx and 429 are retryable", async () => {
    const redirect = await startEndpoint(302, "http://127.0.0.1:1/");
    const webhooks = client({ "hooks.example.com": [publicA] });
    const post = (port: number) =>
      webhooks.post({
        url: `http://hooks.example.com:${port}/`,
        secret: "s",
        deliveryId: "d",
        body: {},
      });
    const redirected = await post(redirect.port);
    expect(redirected).toMatchObject({ ok: false, retryable: false, status: 302 });
    expect(redirect.received).toHaveLength(1);
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    for (const [status, retryable] of [
      [404, false],
      [503, true],
      [429, true],
    ] as const) {
      const endpoint = await startEndpoint(status);
      expect(await post(endpoint.port)).toMatchObject({ ok: false, retryable, status });
      await new Promise<void>((resolve) => server!.close(() => resolve()));
    }
    server = undefined;
  });

  it("an endpoint that is down is a retryable failure, never a throw", async () => {
    const { port } = await startEndpoint();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
    const outcome = await client({ "hooks.example.com": [publicA] }).post({
      url: `http://hooks.example.com:${port}/`,
      secret: "s",
      deliveryId: "d",
      body: {},
    });
    expect(outcome).toMatchObject({ ok: false, retryable: true });
  });

  it("refusalOf follows the egress classes", () => {
    const context = createDestinationContext({
      hostAddresses: () => [],
      platformPorts: () => [7700],
    });
    expect(refusalOf(publicA, 443, context)).toBeUndefined();
    expect(refusalOf(publicA, 7700, context)).toBeUndefined(); // public addresses: not Roost's ports
    expect(refusalOf("100.64.0.1", 80, context)).toContain("cgnat");
    expect(refusalOf("fe80::1", 80, context)).toContain("link-local");
    expect(refusalOf("224.0.0.1", 80, context)).toContain("multicast");
  });
});
