/**
 * Test support for the vault: a fixed, changeable set of brokered secrets per computer (the
 * secrets store implements `BrokeredSecrets` in production).
 */
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { connect as tlsConnect } from "node:tls";
import { connectThroughProxy } from "../../egress/testing/index.ts";
import type { BrokeredSecret, BrokeredSecrets } from "../broker.ts";

export interface FixedBrokeredSecrets extends BrokeredSecrets {
  set(computerId: string, secrets: readonly BrokeredSecret[]): void;
  /** How many times `forComputer` was called. */
  readonly reads: number;
}

export function createFixedBrokeredSecrets(
  initial: Record<string, readonly BrokeredSecret[]> = {},
): FixedBrokeredSecrets {
  const byComputer = new Map(Object.entries(initial));
  let reads = 0;
  return {
    forComputer(computerId) {
      reads += 1;
      return Promise.resolve(byComputer.get(computerId) ?? []);
    },
    set(computerId, secrets) {
      byComputer.set(computerId, secrets);
    },
    get reads() {
      return reads;
    },
  };
}

export interface HttpsThroughProxyResult {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The issuer of the certificate the client was shown (the vault's CA, or the upstream's). */
  issuer: string;
}

/**
 * An HTTPS request through a computer's HTTP proxy socket, as a client with HTTPS_PROXY and
 * SSL_CERT_FILE would make it: CONNECT, TLS trusting `ca` only, then one HTTP/1.1 request.
 * A TLS failure rejects with the error.
 */
export async function httpsThroughProxy(
  socketPath: string,
  url: string,
  options: {
    ca: string[];
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
  },
): Promise<HttpsThroughProxyResult> {
  const target = new URL(url);
  const port = target.port === "" ? 443 : Number(target.port);
  const tunnel = await connectThroughProxy(socketPath, `${target.hostname}:${port}`);
  if (tunnel.status !== 200) {
    tunnel.socket.destroy();
    return { status: tunnel.status, headers: tunnel.headers, body: tunnel.body, issuer: "" };
  }
  const secure = tlsConnect({
    socket: tunnel.socket,
    servername: target.hostname,
    ca: options.ca,
    ALPNProtocols: ["http/1.1"],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      secure.once("secureConnect", () => resolve());
      secure.once("error", reject);
    });
  } catch (error) {
    secure.destroy();
    throw error;
  }
  const commonName = secure.getPeerCertificate().issuer.CN ?? "";
  const issuer = Array.isArray(commonName) ? commonName.join(", ") : commonName;
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        method: options.method ?? "GET",
        path: `${target.pathname}${target.search}`,
        headers: { host: target.host, ...options.headers },
        createConnection: () => secure,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          secure.destroy();
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString("utf8"),
            issuer,
          });
        });
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(options.body);
  });
}
