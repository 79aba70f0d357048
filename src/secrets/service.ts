/**
 * Secrets per bot and per user (issue 12 §2, docs/secrets.md, decision 0023): validation, sealing,
 * the values a computer's tool processes get, and the redactor every result passes.
 *
 * Invariants:
 *   SECR7 names are `[A-Z][A-Z0-9_]*` (at most 64 characters), never a variable the computer's
 *         shell or the platform relies on (PATH, HOME, LD_*, ROOST_*, the proxy and CA variables);
 *         values are 8–4,096 bytes of UTF-8 without NUL; at most 25 per bot and 25 per user (SST2).
 *   SECR8 no view or error ever holds a value: views are names and metadata; a bad value's
 *         error says what is wrong with it, never what it is.
 *   SECR9 a bot's tool processes get its account's user secrets and its own, the bot's winning
 *         on a clash; a brokered secret is the placeholder `roost-secret:NAME` there (the egress
 *         proxy swaps it, decision 0024), never its value.
 *   SECR10 the redactor covers every secret of the account (user and every bot's, brokered ones
 *         too): one computer serves all of the account's bots, so any of them may print any value.
 *   SECR13 a file downloaded through the API passes the same redaction, on its bytes (a value's
 *         UTF-8 bytes and encodings; other bytes unchanged), so the API never answers a value.
 *   SECR15 a bot's shared computer (teams/ routing) is redacted for the bot's owner's secrets and
 *         every secret lent to the bot in any of its shared places (consents, TEAM7).
 */
import { InvalidRequestError, RoostError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";
import type { SecretRecord, SecretScope, Store } from "../store/index.ts";
import type { SecretCipher } from "./crypto.ts";
import { createByteRedactionStream, createRedactor, type Redactor } from "./redactor.ts";

/** SECR7 @default 25 */
export const maxSecretsPerOwner = 25;
export const minSecretBytes = 8;
export const maxSecretBytes = 4096;
export const maxSecretNameChars = 64;
export const maxBrokerHosts = 20;
export const secretNamePattern = /^[A-Z][A-Z0-9_]*$/;

/** SECR7: names the computer's shell, its proxy and CA set-up, or the platform rely on. */
const reservedNames = new Set([
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "PWD",
  "OLDPWD",
  "TERM",
  "LANG",
  "TMPDIR",
  "HOSTNAME",
  "IFS",
  "ENV",
  "BASH_ENV",
  "PS4",
  "PROMPT_COMMAND",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "ALL_PROXY",
  "NO_PROXY",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "NODE_EXTRA_CA_CERTS",
  "NODE_OPTIONS",
  "REQUESTS_CA_BUNDLE",
  "GIT_SSL_CAINFO",
  "CURL_CA_BUNDLE",
]);
const reservedPrefixes = ["LD_", "ROOST_", "BASH_FUNC_"];

/** SECR9: what a brokered secret's variable holds inside the computer. */
export const brokerPlaceholder = (name: string) => `roost-secret:${name}`;

/** SECR7: undefined when the name is usable, else what is wrong and how to fix it. */
export function secretNameProblem(name: string): string | undefined {
  if (!secretNamePattern.test(name))
    return `a secret's name is an upper-case letter, then upper-case letters, digits and _ (like OPENAI_API_KEY); ${JSON.stringify(name.slice(0, 80))} is not`;
  if (name.length > maxSecretNameChars)
    return `a secret's name is at most ${maxSecretNameChars} characters`;
  if (reservedNames.has(name) || reservedPrefixes.some((prefix) => name.startsWith(prefix)))
    return `${name} is a variable the computer or Roost relies on; choose another name (for example MY_${name.replace(/^(LD_|ROOST_|BASH_FUNC_)/, "")})`;
  return undefined;
}

/** SECR7, SECR8: undefined when the value is usable; the problem never quotes the value. */
export function secretValueProblem(value: string): string | undefined {
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes < minSecretBytes || bytes > maxSecretBytes)
    return `a secret's value is ${minSecretBytes} to ${maxSecretBytes} bytes; this one is ${bytes}`;
  if (value.includes("\u0000"))
    return "a secret's value cannot hold a NUL character (environment variables cannot carry one)";
  if (value.includes("[REDACTED]"))
    return "a secret's value cannot contain [REDACTED] (it is what redaction writes); paste the real value";
  return undefined;
}

/** Names that only ever mean this machine or a private network. */
const privateTopLabels = new Set(["localhost", "local", "internal", "arpa", "lan", "home"]);

const hostPattern =
  /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * A brokered secret's hosts: 1–20 lower-case DNS names with a dot and a top-level label that is
 * not a number: never an address or a single-label name (`localhost`), so a value can never be
 * swapped into a request to the host or a private network by name (the egress policy refuses
 * those addresses too, EGR; this keeps the intent out of the store).
 */
export function brokerHostsProblem(hosts: readonly string[]): string | undefined {
  if (hosts.length === 0 || hosts.length > maxBrokerHosts)
    return `broker.hosts lists 1 to ${maxBrokerHosts} host names`;
  const bad = hosts.find((host) => {
    const topLabel = host.slice(host.lastIndexOf(".") + 1);
    return (
      !hostPattern.test(host) ||
      !host.includes(".") ||
      /^\d+$/.test(topLabel) ||
      privateTopLabels.has(topLabel)
    );
  });
  if (bad !== undefined)
    return `broker.hosts holds public host names like api.example.com (lower case, no scheme, port, path, address, single-label or private name such as localhost or *.internal); ${JSON.stringify(bad.slice(0, 100))} is not one`;
  return undefined;
}

export interface BrokeredSecret {
  name: string;
  value: string;
  hosts: string[];
  /** The bot it belongs to; null for a user secret. */
  botId: string | null;
}

export interface SecretsService {
  put(input: {
    scope: SecretScope;
    ownerId: string;
    accountId: string;
    name: string;
    value: string;
    broker?: { hosts: string[] } | undefined;
    actorAccountId: string;
  }): Promise<{ created: boolean; secret: Api.SecretView }>;
  list(scope: SecretScope, ownerId: string): Promise<Api.SecretView[]>;
  delete(input: {
    scope: SecretScope;
    ownerId: string;
    name: string;
    actorAccountId: string;
  }): Promise<boolean>;
  /**
   * SECR9: the variables a bot's tool processes get. `consentedIn`: a shared place whose
   * consented secrets (people's user secrets they lent to this bot there, TEAM7) come along.
   */
  envFor(
    accountId: string | null,
    botId: string | null,
    consentedIn?: string,
  ): Promise<Record<string, string>>;
  /** SECR10: the account's redactor, read fresh from the store (cached while nothing changed). */
  redactorFor(accountId: string): Promise<Redactor>;
  /** Every brokered secret of the account, with its value, for the egress proxy (decision 0024). */
  brokeredFor(accountId: string): Promise<BrokeredSecret[]>;
  /** A file's bytes downloaded through the API, redacted (SECR13); undefined: no secrets. */
  fileRedaction(accountId: string): Promise<TransformStream<Uint8Array, Uint8Array> | undefined>;
  /** Redacts every value this process has loaded a redactor for (log lines: LOG3). */
  redactLoaded(text: string): string;
}

const rowKey = (record: Pick<SecretRecord, "scope" | "ownerId" | "name">) =>
  `${record.scope}:${record.ownerId}:${record.name}`;

const toView = (record: SecretRecord): Api.SecretView => ({
  name: record.name,
  scope: record.scope,
  ...(record.scope === "bot" ? { botId: record.ownerId } : {}),
  broker: record.brokerHosts === null ? null : { hosts: record.brokerHosts },
  createdAt: new Date(record.createdAt).toISOString(),
  updatedAt: new Date(record.updatedAt).toISOString(),
});

export function createSecretsService(deps: {
  store: Store;
  cipher: SecretCipher;
  /** @default maxSecretsPerOwner */
  limit?: number;
}): SecretsService {
  const { store, cipher } = deps;
  const limit = deps.limit ?? maxSecretsPerOwner;
  // The last redactor built per account, by the sealed values it was built from.
  const redactors = new Map<string, { key: string; redactor: Redactor }>();
  const open = (record: SecretRecord) => cipher.open(record.sealed, rowKey(record)); // SECR6
  /** TEAM7: the user secrets people consented to lend `botId` in `placeId` (absent: anywhere). */
  const consentedRecords = async (botId: string, placeId?: string) => {
    const consents = (
      await store.listConsents(placeId === undefined ? { botId } : { botId, placeId })
    ).filter((consent) => consent.kind === "secret");
    const records: SecretRecord[] = [];
    for (const consent of consents) {
      const found = (await store.listSecrets("user", consent.ownerAccountId)).find(
        (record) => record.name === consent.name,
      );
      if (found !== undefined) records.push(found);
    }
    return records;
  };
  /**
   * SECR15: a bot's shared computer (teams/ routing) can hold the bot's secrets (filed under its
   * owner's account) and any secret consented to in any of its places: its redactor covers all.
   */
  const recordsToRedact = async (accountId: string) => {
    const own = await store.listAccountSecrets(accountId);
    const botId = await store.botOfSharedAccount(accountId);
    if (botId === undefined) return own;
    const bot = await store.getBot(botId);
    const owner = bot === undefined ? [] : await store.listAccountSecrets(bot.accountId);
    return [...own, ...owner, ...(await consentedRecords(botId))];
  };

  return {
    async put(input) {
      const issue = (
        [
          ["name", secretNameProblem(input.name)],
          ["value", secretValueProblem(input.value)],
          ["broker.hosts", input.broker && brokerHostsProblem(input.broker.hosts)],
        ] as const
      ).find(([, problem]) => problem !== undefined);
      if (issue !== undefined)
        throw new InvalidRequestError(issue[1]!, {
          issues: [{ path: issue[0], message: issue[1] }],
        }); // SECR7, SECR8
      if (input.broker !== undefined) {
        // SECR14: the proxy cannot tell which bot's process sent a request, so a brokered name is
        // one secret across the account's computer.
        const clash = (await store.listAccountSecrets(input.accountId)).find(
          (record) =>
            record.name === input.name &&
            record.brokerHosts !== null &&
            (record.scope !== input.scope || record.ownerId !== input.ownerId),
        );
        if (clash !== undefined)
          throw new RoostError(
            "conflict",
            `${input.name} is already a brokered secret of ${clash.scope === "user" ? "your user secrets" : "another of your bots"}; all your bots share one computer, so a brokered name must be unique: pick another name, or delete that one first`,
          );
      }
      const outcome = await store.putSecret({
        scope: input.scope,
        ownerId: input.ownerId,
        accountId: input.accountId,
        name: input.name,
        sealed: cipher.seal(input.value, rowKey(input)),
        brokerHosts: input.broker === undefined ? null : [...new Set(input.broker.hosts)],
        limit,
        actorAccountId: input.actorAccountId,
      });
      if (outcome.outcome === "limited")
        throw new InvalidRequestError(
          `${input.scope === "bot" ? "a bot" : "a user"} has at most ${limit} secrets; delete one you no longer need (DELETE …/secrets/{NAME}) before adding ${input.name}`,
          { issues: [{ path: "name", message: `at most ${limit} secrets` }] },
        );
      return { created: outcome.outcome === "created", secret: toView(outcome.record) };
    },

    async list(scope, ownerId) {
      return (await store.listSecrets(scope, ownerId)).map(toView);
    },

    delete: (input) => store.deleteSecret(input),

    async envFor(accountId, botId, consentedIn) {
      const env: Record<string, string> = {};
      // ROUTE2 (teams/routing.ts): a route may leave out the user's or the bot's secrets.
      const records = [
        ...(botId === null || consentedIn === undefined
          ? []
          : await consentedRecords(botId, consentedIn)),
        ...(accountId === null ? [] : await store.listSecrets("user", accountId)),
        ...(botId === null ? [] : await store.listSecrets("bot", botId)), // SECR9: the bot's win
      ];
      for (const record of records)
        env[record.name] =
          record.brokerHosts === null ? open(record) : brokerPlaceholder(record.name);
      return env;
    },

    async redactorFor(accountId) {
      const records = await recordsToRedact(accountId); // SECR10, SECR15
      const key = records.map((record) => record.sealed).join("\n");
      const known = redactors.get(accountId);
      if (known?.key === key) return known.redactor;
      const redactor = createRedactor(records.map(open));
      redactors.set(accountId, { key, redactor });
      return redactor;
    },

    async fileRedaction(accountId) {
      const records = await store.listAccountSecrets(accountId);
      return records.length === 0 ? undefined : createByteRedactionStream(records.map(open));
    },

    redactLoaded(text) {
      let result = text;
      for (const { redactor } of redactors.values()) result = redactor.whole(result);
      return result;
    },

    async brokeredFor(accountId) {
      return (await store.listAccountSecrets(accountId))
        .filter((record) => record.brokerHosts !== null)
        .map((record) => ({
          name: record.name,
          value: open(record),
          hosts: record.brokerHosts!,
          botId: record.scope === "bot" ? record.ownerId : null,
        }));
    },
  };
}

/**
 * For the egress proxy's vault (decision 0024): a computer's brokered secrets, values decrypted.
 * A computer serves one account, so it is the account's (user and every bot's) brokered secrets.
 */
export function createBrokeredSecrets(deps: {
  store: Pick<Store, "getComputer">;
  secrets: Pick<SecretsService, "brokeredFor">;
}): { forComputer(computerId: string): Promise<(BrokeredSecret & { accountId: string })[]> } {
  return {
    async forComputer(computerId) {
      const computer = await deps.store.getComputer(computerId);
      if (computer === undefined) return [];
      return (await deps.secrets.brokeredFor(computer.accountId)).map((secret) => ({
        ...secret,
        accountId: computer.accountId, // the vault's audit row names the owner
      }));
    },
  };
}
