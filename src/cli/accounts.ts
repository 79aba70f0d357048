/** `roost accounts create` (admin only). */
import { booleanOption, type CommandGroup } from "./args.ts";
import { clientEnvironment, clientFor, clientOptions } from "./client-config.ts";

export const accountsGroup: CommandGroup = {
  name: "accounts",
  summary: "Manage accounts (admin only).",
  commands: [
    {
      spec: {
        name: "accounts create",
        summary: "Create an account and print its first API token (shown only this once).",
        synopsis: "NAME [options]",
        options: {
          json: { type: "boolean", description: "print JSON instead of text" },
          ...clientOptions,
        },
        positionals: { min: 1, max: 1, names: "NAME" },
        environment: clientEnvironment,
        examples: [
          "roost accounts create alice",
          "ROOST_TOKEN=$(roost accounts create bob --json | jq -r .token) roost bots list",
        ],
      },
      async run(args, io) {
        const created = await clientFor(args, io).createAccount(args.positionals[0] ?? "");
        if (booleanOption(args, "json")) {
          io.stdout.write(`${JSON.stringify(created, null, 2)}\n`);
          return 0;
        }
        io.stdout.write(
          `account ${created.account.id} (${created.account.name})\ntoken   ${created.token}\n`,
        );
        io.stderr.write("Keep the token: Roost stores only its hash and cannot show it again.\n");
        return 0;
      },
    },
  ],
};
