#!/usr/bin/env node
// The `roost` launcher (`npx roost …`). Roost ships TypeScript sources that Node ≥ 24 runs
// directly (type stripping), so there is no build step. This file stays plain JavaScript that
// old Node versions can parse:
// - on Node ≥ 24 it runs src/cli/main.ts in this same process;
// - on an older Node it runs itself again, quietly, with the Node 24 that `npm start` provisions
//   (scripts/node24.mjs: $ROOST_NODE_CACHE, default ~/.cache/roost-node) when that exists, and
//   otherwise says clearly what to install.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  environmentFor,
  isNodeNewEnough,
  nodeCache,
  provisionedNode,
  requiredMajor,
  runWith,
} from "../scripts/node24.mjs";

if (isNodeNewEnough()) {
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
  const provisioned = provisionedNode();
  if (provisioned !== undefined && existsSync(provisioned)) {
    runWith(
      provisioned,
      [fileURLToPath(import.meta.url), ...process.argv.slice(2)],
      environmentFor(provisioned),
    );
  } else {
    process.stderr.write(
      `roost: Node ${requiredMajor} or newer is required, but this is Node ${process.versions.node} (${process.execPath}).\n` +
        `Install Node ${requiredMajor} LTS (https://nodejs.org, or \`nvm install ${requiredMajor}\`) and run roost again;\n` +
        `or run \`npm start\` once, which provisions Node ${requiredMajor} for Roost in ${nodeCache()}.\n`,
    );
    process.exit(1);
  }
}
