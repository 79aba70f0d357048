/** `roost bots list` and `roost bots create`. */
import { booleanOption, stringOption, table, type Command, type CommandGroup } from "./args.ts";
import type { Api } from "../protocol/index.ts";
import { clientEnvironment, clientFor, clientOptions } from "./client-config.ts";
import { paint } from "./io.ts";

const jsonOption = {
  json: { type: "boolean", description: "print JSON instead of text" },
} as const;

const listCommand: Command = {
  spec: {
    name: "bots list",
    summary: "List the account's bots.",
    synopsis: "[options]",
    options: {
      ...jsonOption,
      names: { type: "boolean", description: "print only the names, one a line (for scripts)" },
      ...clientOptions,
    },
    positionals: { min: 0, max: 0, names: "" },
    environment: clientEnvironment,
  },
  async run(args, io) {
    const bots = await clientFor(args, io).listBots();
    if (booleanOption(args, "names")) {
      for (const bot of bots) io.stdout.write(`${bot.name}\n`);
      return 0;
    }
    if (booleanOption(args, "json")) {
      io.stdout.write(`${JSON.stringify(bots, null, 2)}\n`);
      return 0;
    }
    if (bots.length === 0) {
      io.stderr.write(
        'no bots yet (create one with `roost bots create NAME`, or just run `roost chat "hello"`)\n',
      );
      return 0;
    }
    const lines = table([
      ["NAME", "MODEL", "ID"],
      ...bots.map((bot) => [bot.name, modelLabel(bot), bot.id]),
    ]);
    lines.forEach((line, index) =>
      io.stdout.write(`${index === 0 ? paint(io, io.stdout, "bold", line) : line}\n`),
    );
    return 0;
  },
};

const createCommand: Command = {
  spec: {
    name: "bots create",
    summary: "Create a bot.",
    synopsis: "NAME [options]",
    options: {
      instructions: {
        type: "string",
        short: "i",
        value: "TEXT",
        description: "what the bot is for and how it should behave",
      },
      model: {
        type: "string",
        short: "m",
        value: "SPEC",
        description:
          'its model: "provider:model" (e.g. openai:gpt-4.1-mini) or "demo"; the platform default if omitted',
      },
      ...jsonOption,
      ...clientOptions,
    },
    positionals: { min: 1, max: 1, names: "NAME" },
    environment: clientEnvironment,
    examples: [
      'roost bots create researcher --instructions "Find sources and cite them." --model anthropic:claude-sonnet-4-5',
    ],
  },
  async run(args, io) {
    const instructions = stringOption(args, "instructions");
    const model = stringOption(args, "model");
    const bot = await clientFor(args, io).createBot({
      name: args.positionals[0] ?? "",
      ...(instructions === undefined ? {} : { instructions }),
      ...(model === undefined ? {} : { model }),
    });
    if (booleanOption(args, "json")) io.stdout.write(`${JSON.stringify(bot, null, 2)}\n`);
    else io.stdout.write(`created bot ${bot.name} (${bot.id}), model ${modelLabel(bot)}\n`);
    return 0;
  },
};

export const botsGroup: CommandGroup = {
  name: "bots",
  summary: "Manage the account's bots.",
  commands: [listCommand, createCommand],
};

function modelLabel(bot: Api.Bot): string {
  return bot.model === null ? `${bot.effectiveModel} (default)` : bot.model;
}
