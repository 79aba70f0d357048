#!/usr/bin/env node
// Builds the web app (web/ → web/dist) when web/dist is missing or older than any of its
// sources; does nothing (in a few milliseconds) when it is up to date. `npm start` runs it first.
// Plain JavaScript on purpose: it runs before anything else, on any Node.
// Exit code 0 even when Vite is not installed (a production install without dev dependencies):
// the server then answers / with a page that says how to build the app.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const web = join(root, "web");
const builtIndex = join(web, "dist", "index.html");
const force = process.argv.includes("--force");

/** Newest modification time under `path`, skipping web/dist and node_modules. */
function newest(path) {
  let info;
  try {
    info = statSync(path);
  } catch {
    return 0;
  }
  if (!info.isDirectory()) return info.mtimeMs;
  let latest = info.mtimeMs;
  for (const name of readdirSync(path)) {
    if (name === "dist" || name === "node_modules" || name.startsWith(".")) continue;
    latest = Math.max(latest, newest(join(path, name)));
  }
  return latest;
}

if (!existsSync(web)) process.exit(0);
const builtAt = existsSync(builtIndex) ? statSync(builtIndex).mtimeMs : 0;
// package-lock.json: a library upgrade changes the bundle too.
const sourcesAt = Math.max(newest(web), newest(join(root, "package-lock.json")));
if (!force && builtAt > 0 && builtAt >= sourcesAt) process.exit(0);

const vite = join(root, "node_modules", "vite", "bin", "vite.js");
if (!existsSync(vite)) {
  console.error(
    "roost: the web app is not built and Vite is not installed (run `npm install`, then `npm run build:web`); starting without it",
  );
  process.exit(0);
}
console.error(
  builtAt === 0
    ? "roost: building the web app (once)…"
    : "roost: the web app changed; rebuilding it…",
);
const started = Date.now();
// NODE_ENV decides which React build is bundled; test runners set it to "test".
const result = spawnSync(process.execPath, [vite, "build", web, "--logLevel", "warn"], {
  stdio: "inherit",
  cwd: root,
  env: { ...process.env, NODE_ENV: "production" },
});
if (result.status !== 0) {
  console.error(
    "roost: building the web app failed (see above); fix it, or run `npm run build:web` to see the full output",
  );
  process.exit(result.status ?? 1);
}
console.error(`roost: web app built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
