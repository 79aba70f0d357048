/** The `roost` command. */
import { parseArgs } from "node:util";
import { toRoostError } from "../errors/index.ts";
import { up } from "./up.ts";

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({ args: rest, strict: false, allowPositionals: true });
  switch (command) {
    case "up":
      await up(values, process.env);
      return;
    default:
      console.error(`roost: unknown command ${JSON.stringify(command)}`);
      process.exitCode = 2;
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const roost = toRoostError(error);
  console.error(`roost: ${roost.message}`);
  process.exitCode = 1;
});
