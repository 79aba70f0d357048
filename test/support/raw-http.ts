/**
 * One HTTP request with exactly the headers given (`Host` included, which fetch cannot set), the
 * answer read whole. Port previews on hosts of their own (`p8000-….localhost`) are reached this
 * way at 127.0.0.1, without DNS.
 */
import http from "node:http";

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  text: string;
  json: Record<string, unknown> & { error?: { code: string; message: string } };
}

export function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: Buffer | string } = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, {
      method: options.method ?? "GET",
      headers: options.headers ?? {},
      setHost: options.headers?.host === undefined,
    });
    request.on("response", (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        const body = Buffer.concat(chunks);
        const text = body.toString("utf8");
        let json: RawAnswer["json"] = {};
        try {
          json = JSON.parse(text) as RawAnswer["json"];
        } catch {
          // not JSON
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body, text, json });
      });
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(options.body);
  });
}
