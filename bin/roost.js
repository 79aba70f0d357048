#!/usr/bin/env node
// The `roost` launcher (`npx roost …`): checks the Node version, then runs src/cli/main.ts in
// this same process. Roost ships TypeScript sources that Node ≥ 24 runs directly (type
// stripping), so there is no build step; this file stays plain JavaScript that older Node
// versions can still parse, so they get a clear message instead of a syntax error.
const required = 24;
const major = Number(process.versions.node.split(".")[0]);

if (!(major >= required)) {
  process.stderr.write(
    `roost: Node ${required} or newer is required, but this is Node ${process.versions.node} (${process.execPath}).\n` +
      `Install Node ${required} LTS (https://nodejs.org, or \`nvm install ${required}\`) and run roost again.\n`,
  );
  process.exit(1);
}

import("../src/cli/main.ts")
  .then(async ({ runCli }) => {
    process.exitCode = await runCli(process.argv.slice(2), {
      stdout: process.stdout,
      stderr: process.stderr,
      stdin: process.stdin,
      env: process.env,
    });
  })
  .catch((error) => {
    process.stderr.write(`roost: could not start: ${error && error.stack ? error.stack : String(error)}\n`);
    process.exit(1);
  });
