/**
 * Where the CLI finds Roost and which token it sends, resolved once per command:
 *   URL:   --url > ROOST_URL > http://127.0.0.1:${ROOST_PORT:-7700}
 *   token: --token > ROOST_TOKEN > contents of $ROOST_DATA_DIR/admin-token (data dir default .roost)
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { stringOption, type OptionSpec, type ParsedArgs } from "./args.ts";
import { createClient, type RoostClient } from "./client.ts";
import { CliError } from "./io.ts";

/** Options every command that talks to Roost accepts. */
export const clientOptions: Record<string, OptionSpec> = {
  url: {
    type: "string",
    value: "URL",
    description: "where Roost listens",
    env: "ROOST_URL",
    default: "http://127.0.0.1:$ROOST_PORT (7700)",
  },
  token: {
    type: "string",
    value: "TOKEN",
    description: "API token to send",
    env: "ROOST_TOKEN",
    default: "contents of $ROOST_DATA_DIR/admin-token",
  },
};

export const clientEnvironment: [string, string][] = [
  ["ROOST_PORT", "port of the default URL (7700)"],
  ["ROOST_DATA_DIR", "data dir holding admin-token, the token used when none is given (.roost)"],
];

export interface ClientConfig {
  url: string;
  token: string;
  /** Where the token came from, for error messages. */
  tokenSource: string;
}

export function resolveClientConfig(
  args: ParsedArgs,
  env: Record<string, string | undefined>,
  readFile: (path: string) => string = (path) => readFileSync(path, "utf8"),
): ClientConfig {
  const url =
    nonEmpty(stringOption(args, "url")) ??
    nonEmpty(env.ROOST_URL) ??
    `http://127.0.0.1:${nonEmpty(env.ROOST_PORT) ?? "7700"}`;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error("scheme");
  } catch {
    throw new CliError(
      `the Roost URL must be an http(s) URL, got ${JSON.stringify(url)} (check --url or ROOST_URL)`,
      2,
    );
  }

  const fromFlag = nonEmpty(stringOption(args, "token"));
  if (fromFlag !== undefined) return { url, token: fromFlag, tokenSource: "--token" };
  const fromEnv = nonEmpty(env.ROOST_TOKEN);
  if (fromEnv !== undefined) return { url, token: fromEnv, tokenSource: "ROOST_TOKEN" };
  const tokenFile = join(resolve(nonEmpty(env.ROOST_DATA_DIR) ?? ".roost"), "admin-token");
  let token: string | undefined;
  try {
    token = nonEmpty(readFile(tokenFile).trim());
  } catch {
    token = undefined;
  }
  if (token === undefined) {
    throw new CliError(
      `no API token: pass --token, set ROOST_TOKEN, or run this where \`roost up\` keeps its data (it writes ${tokenFile}; set ROOST_DATA_DIR if it is elsewhere)`,
    );
  }
  return { url, token, tokenSource: tokenFile };
}

export function clientFor(
  args: ParsedArgs,
  io: { env: Record<string, string | undefined> },
): RoostClient {
  const config = resolveClientConfig(args, io.env);
  return createClient({ url: config.url, token: config.token });
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}
