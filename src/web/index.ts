/**
 * The web app's server side: serves the built app (`web/dist`) at `/` with client-side routes
 * falling back to `index.html`, and the embedded install's local sign-in at `GET /auth/local`.
 * Everything else the page does goes through the HTTP API (`/v1/*`), which this module never
 * answers.
 *
 * Mount it after the API, on the same Hono app, so `/v1/*` keeps the API's own 404s:
 *
 *   const api = createApi(…);
 *   api.route("/", createWebHandler({ distDir: defaultWebDistDir, localSignIn: { tokenFile } }));
 */
import { fileURLToPath } from "node:url";
import { Hono } from "hono";
import { createLocalSignInHandler, type LocalSignInOptions } from "./local-sign-in.ts";
import { createStaticFiles } from "./static-files.ts";

export { isLoopbackAddress, isLoopbackHost, type LocalSignInOptions } from "./local-sign-in.ts";

/** `web/dist` of this checkout. */
export const defaultWebDistDir = fileURLToPath(new URL("../../web/dist", import.meta.url));

export interface WebHandlerOptions {
  /** The built app (`npm run build:web`). @default defaultWebDistDir */
  distDir?: string;
  /**
   * Turns on `GET /auth/local` (embedded single-user mode only; see
   * docs/decisions/0004-web-local-sign-in.md). Off when undefined.
   */
  localSignIn?: LocalSignInOptions;
}

const notBuiltPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Roost</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}
code{background:#eee;padding:.1em .3em;border-radius:4px}@media(prefers-color-scheme:dark){body{background:#111;color:#ddd}code{background:#333}}</style></head>
<body><h1>The web app is not built yet</h1><p>The API is running, but <code>web/dist</code> is missing. Run
<code>npm run build:web</code> (or start Roost with <code>npm start</code>, which builds it when needed), then reload this page.</p></body></html>`;

/** The page loads only its own scripts and talks only to its own origin. */
const htmlSecurityHeaders = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; " +
    "object-src 'none'; frame-src blob:; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

/** A Hono app serving the web app and `GET /auth/local`; it ignores `/v1/*`. */
export function createWebHandler(options: WebHandlerOptions = {}): Hono {
  const files = createStaticFiles(options.distDir ?? defaultWebDistDir);
  const app = new Hono();

  app.get("/auth/local", createLocalSignInHandler(options.localSignIn));

  app.on(["GET", "HEAD"], "*", async (context) => {
    const path = context.req.path;
    if (path === "/v1" || path.startsWith("/v1/")) return context.notFound();
    const file = await files.get(path, {
      acceptEncoding: context.req.header("accept-encoding"),
      ifNoneMatch: context.req.header("if-none-match"),
    });
    if (file === undefined) {
      if (!(await files.isBuilt()))
        return context.html(notBuiltPage, 503, { "cache-control": "no-store" });
      return context.text(`no file ${path} in the web app`, 404, { "cache-control": "no-store" });
    }
    if (file.headers["content-type"]?.startsWith("text/html") === true)
      Object.assign(file.headers, htmlSecurityHeaders);
    if (file.status === 304) return context.body(null, 304, file.headers);
    const headers = { ...file.headers, "content-length": String(file.body.byteLength) };
    if (context.req.method === "HEAD") return context.body(null, 200, headers);
    return context.body(file.body as Uint8Array<ArrayBuffer>, 200, headers);
  });

  return app;
}
