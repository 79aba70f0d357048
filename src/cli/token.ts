/** `roost token create`: a new API token for the calling account. */
import { booleanOption, stringOption, type CommandGroup } from "./args.ts";
import { clientEnvironment, clientFor, clientOptions } from "./client-config.ts";

export const tokenGroup: CommandGroup = {
  name: "token",
  summary: "Manage the calling account's API tokens.",
  commands: [
    {
      spec: {
        name: "token create",
        summary: "Create an API token for the calling account and print it (shown only this once).",
        synopsis: "[options]",
        options: {
          name: {
            type: "string",
            value: "NAME",
            description: "a label to recognise the token by",
            default: "token",
          },
          json: { type: "boolean", description: "print JSON instead of text" },
          ...clientOptions,
        },
        positionals: { min: 0, max: 0, names: "" },
        environment: clientEnvironment,
        examples: ['roost token create --name "laptop"'],
      },
      async run(args, io) {
        const created = await clientFor(args, io).createToken("me", stringOption(args, "name"));
        if (booleanOption(args, "json")) {
          io.stdout.write(`${JSON.stringify(created, null, 2)}\n`);
          return 0;
        }
        io.stdout.write(`${created.token}\n`);
        io.stderr.write(
          `Token ${created.id} for account ${created.accountId}. Keep it: Roost stores only its hash.\n`,
        );
        return 0;
      },
    },
  ],
};
