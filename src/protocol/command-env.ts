/**
 * Variables a worker passes to the commands it starts but does not live with itself. A provider
 * puts them, as one JSON object, in `ROOST_COMMAND_ENV` of the worker's environment; the worker
 * drops every `ROOST_*` variable from its commands' environment (they hold its configuration and
 * token) and adds these instead. The local provider sets `NODE_USE_ENV_PROXY=1` this way: the
 * computer's Node programs honour its proxy variables, and the worker's own start does not pay
 * for Node's proxy agent.
 */
export const commandEnvVariable = "ROOST_COMMAND_ENV";

export class CommandEnvError extends Error {
  override readonly name = "CommandEnvError";
}

/**
 * The command-only variables in `env`: {} when there are none. Throws on a value that is not a
 * JSON object of strings, naming the variable (a provider's bug, not a user's input).
 */
export function commandOnlyEnv(
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const raw = env[commandEnvVariable];
  if (raw === undefined || raw === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new CommandEnvError(`${commandEnvVariable} must be a JSON object of strings, got ${raw}`);
  const variables: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value !== "string" || name === "" || name.includes("="))
      throw new CommandEnvError(
        `${commandEnvVariable} must be a JSON object of strings, got ${raw}`,
      );
    if (!name.startsWith("ROOST_")) variables[name] = value;
  }
  return variables;
}
