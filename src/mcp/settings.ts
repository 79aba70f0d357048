/**
 * MCP server settings (docs/mcp.md): what `PUT /v1/bots/{id}/mcp-servers/{name}` and
 * `PUT /v1/me/mcp-servers/{name}` accept, how they are kept, and how the API shows them.
 *
 * Invariants:
 *   MCPS1 a server name is 1–24 of [a-z0-9_-], starting with a letter or digit: it becomes part of
 *         tool names (`mcp__<server>__<tool>`), so it can carry no path, shell or prompt syntax.
 *   MCPS2 the values of `env` and `headers` (literals and `{"secret": NAME}` references alike) are
 *         sealed with the secrets key (src/secrets), under the server's row as associated data;
 *         a view shows their names only, never a value (`{"hidden": true}` or the secret's name).
 *   MCPS3 a server "needs secrets" when a value refers to a secret, it sends any header (HTTP
 *         headers carry credentials) or it holds OAuth state (oauth.ts): its tools are offered only when the turn's talking person
 *         is the bot's owner (source.ts MCP6).
 *   MCPS4 a bad body is a 400 that says how to fix it and stores nothing: variables the computer
 *         relies on (PATH, HOME, LD_*, the proxy and CA variables) and headers the transport sets
 *         itself are refused; a URL must be http(s), without credentials or a #fragment.
 */
import { z } from "zod";
import { InvalidRequestError } from "../errors/index.ts";
import { mcpLimits, type Api } from "../protocol/index.ts";
import type { SecretCipher } from "../secrets/index.ts";
import type { McpScope, McpServerRecord, McpTransport } from "../store/index.ts";
import { readOAuth } from "./oauth.ts";

/** At most this many servers per bot, and per user. */
export const maxMcpServersPerOwner = 20;

const reservedEnv = new Set([
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "PWD",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "ALL_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "all_proxy",
  "no_proxy",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "NODE_EXTRA_CA_CERTS",
  "NODE_OPTIONS",
  "REQUESTS_CA_BUNDLE",
  "GIT_SSL_CAINFO",
  "CURL_CA_BUNDLE",
  "BASH_ENV",
  "ENV",
]);
const reservedEnvPrefixes = ["LD_", "ROOST_", "BASH_FUNC_"];
const reservedHeaders = new Set([
  "host",
  "content-length",
  "content-type",
  "connection",
  "transfer-encoding",
  "upgrade",
  "accept",
  "mcp-session-id",
  "mcp-protocol-version",
  "last-event-id",
]);

const secretRef = z.strictObject({
  secret: z
    .string()
    .regex(
      /^[A-Z][A-Z0-9_]{0,63}$/,
      "a secret's name, like MY_API_KEY (see /v1/bots/{id}/secrets)",
    ),
});
const value = z.union([z.string().max(8192), secretRef], {
  error: 'each value is a string or {"secret": "NAME"} (a secret of the bot or of your account)',
});

const commandBody = z.strictObject({
  command: z
    .string({ error: "command is the program to run, e.g. npx or /usr/bin/python3" })
    .min(1, "command is the program to run, e.g. npx")
    .max(1024)
    .refine((text) => !text.includes("\0"), "command must not contain NUL"),
  args: z
    .array(
      z
        .string()
        .max(mcpLimits.maxArgChars)
        .refine((text) => !text.includes("\0"), "an argument must not contain NUL"),
      {
        error: 'args is a list of strings, e.g. ["-y", "@modelcontextprotocol/server-everything"]',
      },
    )
    .max(mcpLimits.maxArgs)
    .default([]),
  env: z.record(z.string(), value).optional(),
});

const httpBody = z.strictObject({
  url: z
    .string({
      error: "url is the server's streamable HTTP endpoint, e.g. https://mcp.example.com/mcp",
    })
    .max(2000),
  headers: z.record(z.string(), value).optional(),
});

export type McpValue = string | { secret: string };

/** A server's settings as validated: the plain part and the values to seal. */
export type McpSettings =
  | { transport: "command"; command: string; args: string[]; env: Record<string, McpValue> }
  | { transport: "http"; url: string; headers: Record<string, McpValue> };

/** MCPS4: why an env variable's name is refused, or undefined. */
function envNameProblem(name: string): string | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name))
    return "is not an environment variable name (letters, digits and _, like API_URL)";
  if (reservedEnv.has(name) || reservedEnvPrefixes.some((prefix) => name.startsWith(prefix)))
    return "is a variable the computer relies on (PATH, HOME, the proxy and CA variables, LD_*, ROOST_*); choose another name";
  return undefined;
}

/** MCPS4: why a header's name is refused, or undefined. */
function headerNameProblem(name: string): string | undefined {
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/.test(name))
    return "is not a header name (like Authorization or X-Api-Key)";
  if (reservedHeaders.has(name.toLowerCase()))
    return "is set by the MCP transport itself; leave it out";
  return undefined;
}

function checkNames(
  field: "env" | "headers",
  values: Record<string, unknown>,
  problemOf: (name: string) => string | undefined,
  most: number,
): void {
  const names = Object.keys(values);
  if (names.length > most) throw invalid(field, `at most ${most} entries`);
  for (const name of names) {
    const problem = problemOf(name);
    if (problem !== undefined)
      throw invalid(`${field}.${name}`, `${JSON.stringify(name.slice(0, 64))} ${problem}`);
  }
}

/** MCPS1: undefined when usable, else what is wrong and how to fix it. */
export function mcpServerNameProblem(name: string): string | undefined {
  return mcpLimits.serverName.test(name)
    ? undefined
    : `an MCP server's name is 1 to 24 of a-z, 0-9, _ and -, starting with a letter or digit (like github or my-tools); ${JSON.stringify(name.slice(0, 40))} is not`;
}

function invalid(path: string, message: string): InvalidRequestError {
  return new InvalidRequestError(path === "" ? message : `${path}: ${message}`, {
    issues: [{ path, message }],
  });
}

/** MCPS4: parses a PUT body; throws InvalidRequestError saying how to fix it. */
export function parseMcpSettings(body: unknown): McpSettings {
  const object = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
  const schema = "command" in object ? commandBody : "url" in object ? httpBody : undefined;
  if (schema === undefined)
    throw invalid(
      "",
      'send {"command": "...", "args": [...], "env": {...}} for a command (stdio) server, or {"url": "https://...", "headers": {...}} for a streamable HTTP server',
    );
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(issue?.path.join(".") ?? "", issue?.message ?? "invalid settings");
  }
  if ("command" in parsed.data) {
    const data = parsed.data;
    checkNames("env", data.env ?? {}, envNameProblem, mcpLimits.maxEnv);
    return { transport: "command", command: data.command, args: data.args, env: data.env ?? {} };
  }
  const data = parsed.data;
  checkNames("headers", data.headers ?? {}, headerNameProblem, 32);
  let url: URL;
  try {
    url = new URL(data.url);
  } catch {
    throw invalid("url", "must be an absolute http(s) URL, e.g. https://mcp.example.com/mcp");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw invalid("url", `must be an http or https URL (got ${url.protocol})`);
  if (url.username !== "" || url.password !== "")
    throw invalid("url", "must not carry a user name or password; put credentials in headers");
  if (url.hash !== "") throw invalid("url", "must not have a #fragment");
  return { transport: "http", url: url.href, headers: data.headers ?? {} };
}

/** MCPS2: the associated data a server's sealed values are bound to. */
export const sealRow = (key: { scope: McpScope; ownerId: string; name: string }) =>
  `mcp:${key.scope}:${key.ownerId}:${key.name}`;

/** The parts of a record the store keeps for these settings (MCPS2, MCPS3). */
export function toStored(
  settings: McpSettings,
  key: { scope: McpScope; ownerId: string; name: string },
  cipher: SecretCipher,
): { transport: McpTransport; spec: string; sealed: string | null; secretNames: string[] } {
  const values = settings.transport === "command" ? settings.env : settings.headers;
  const secretNames = [
    ...new Set(
      Object.values(values).flatMap((entry) => (typeof entry === "string" ? [] : [entry.secret])),
    ),
  ].sort();
  const spec =
    settings.transport === "command"
      ? JSON.stringify({ command: settings.command, args: settings.args })
      : JSON.stringify({ url: settings.url });
  return {
    transport: settings.transport,
    spec,
    sealed:
      Object.keys(values).length === 0 ? null : cipher.seal(JSON.stringify(values), sealRow(key)),
    secretNames,
  };
}

/** A stored server's settings, its values unsealed (server side only). */
export function fromStored(record: McpServerRecord, cipher: SecretCipher): McpSettings {
  const values =
    record.sealed === null
      ? {}
      : (JSON.parse(cipher.open(record.sealed, sealRow(record))) as Record<string, McpValue>);
  const spec = JSON.parse(record.spec) as { command?: string; args?: string[]; url?: string };
  return record.transport === "command"
    ? { transport: "command", command: spec.command ?? "", args: spec.args ?? [], env: values }
    : { transport: "http", url: spec.url ?? "", headers: values };
}

/** MCPS3 */
export function needsSecrets(record: McpServerRecord, settings: McpSettings): boolean {
  return (
    record.secretNames.length > 0 ||
    record.oauth !== null ||
    (settings.transport === "http" && Object.keys(settings.headers).length > 0)
  );
}

/** MCPO1: whether it is connected, and the link the owner opens; never a token. */
function oauthView(record: McpServerRecord, cipher: SecretCipher): Api.McpServerView["oauth"] {
  const state = readOAuth(record, cipher);
  return {
    connected: state.tokens !== undefined,
    authorizationUrl: state.tokens === undefined ? (state.authorizationUrl ?? null) : null,
  };
}

const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());

/** MCPS2: the API's view; values are names only. */
export function toView(record: McpServerRecord, cipher: SecretCipher): Api.McpServerView {
  const settings = fromStored(record, cipher);
  const shown = (values: Record<string, McpValue>) =>
    Object.fromEntries(
      Object.entries(values).map(([name, entry]): [string, Api.McpValueView] => [
        name,
        typeof entry === "string" ? { hidden: true } : { secret: entry.secret },
      ]),
    );
  return {
    name: record.name,
    scope: record.scope,
    ...(record.scope === "bot" ? { botId: record.ownerId } : {}),
    transport: record.transport,
    ...(settings.transport === "command"
      ? { command: settings.command, args: settings.args, env: shown(settings.env) }
      : { url: settings.url, headers: shown(settings.headers) }),
    usesSecrets: needsSecrets(record, settings),
    ...(record.oauth === null ? {} : { oauth: oauthView(record, cipher) }),
    status: {
      tools: record.tools?.map((tool) => tool.name) ?? null,
      listedAt: iso(record.listedAt),
      lastError: record.lastError,
      lastErrorAt: iso(record.lastErrorAt),
    },
    createdAt: new Date(record.createdAt).toISOString(),
    updatedAt: new Date(record.updatedAt).toISOString(),
  };
}
