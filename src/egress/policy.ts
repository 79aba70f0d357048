/**
 * Egress policies: their format (validated with zod), compiled matchers and the decision for one
 * destination. The proxy (proxy.ts) asks twice: `checkName` before it resolves a name and
 * `checkAddress` for every address the name resolved to, or for the literal address requested.
 *
 * Invariants:
 *   P1 `none` refuses everything; no rule can open it.
 *   P2 A deny rule beats every allow rule, in every mode.
 *   P3 Whatever the policy and the operator say, these are refused: loopback and unspecified
 *      addresses, link-local (169.254.0.0/16 with the cloud metadata address, fe80::/10),
 *      multicast and broadcast, every address of the host itself, and Roost's own ports on any
 *      address that is not public.
 *   P4 A private or CGNAT address is refused unless the operator opened a range holding it
 *      (`allowPrivate`, ROOST_EGRESS_ALLOW_PRIVATE) and P5 allows it.
 *   P5 A non-public address needs an allow rule whose IP range contains it and lies itself in
 *      non-public space (A4). Domain rules, wildcards, the defaults, `allow-all` and broad
 *      ranges such as `0.0.0.0/0` or `::/0` reach public addresses only.
 *   P6 Allow rules without ports allow 80 and 443; deny rules without ports deny every port.
 *   P7 A name is resolved only when a domain rule, a wildcard, the defaults or `allow-all` allow
 *      it on the requested port; IP rules never make the proxy look a name up.
 *   P8 A user's policy (`parseUserEgressPolicy`) is refused, with the reason, when an allow rule
 *      can only name what P3 or P4 refuse; broad ranges are accepted (P5 keeps them public).
 */
import { domainToASCII } from "node:url";
import { z } from "zod";
import { InvalidRequestError } from "../errors/index.ts";
import {
  classifyAddress,
  classifyRange,
  formatRange,
  isSingleAddress,
  operatorClasses,
  parseCidr,
  parseIp,
  rangeContains,
  rangesOverlap,
  unreachableClasses,
  type AddressClass,
  type IpRange,
  type ParsedIp,
} from "./addresses.ts";
import { defaultHostPorts, defaultHosts } from "./defaults.ts";

export const egressModes = [
  "allow-all",
  "defaults-and-allowlist",
  "allowlist-only",
  "none",
] as const;
/** How much of the internet a computer may reach; see docs/egress.md. */
export type EgressMode = (typeof egressModes)[number];

/** A port (`443`) or an inclusive range (`"8000-8100"`). */
export type PortSpec = number | string;

/** One rule, normalized: a domain, `*.domain`, an IP address or a CIDR range, with its ports. */
export interface EgressRule {
  host: string;
  /** `"*"` for every port; omitted: 80 and 443 in allow rules, every port in deny rules (P6). */
  ports?: "*" | PortSpec[];
}

/**
 * What a rule may be written as: the object form, or a string `host[:ports]` such as
 * `"github.com"`, `"*.example.com:443,8443"`, `"10.0.0.0/8:5432"`, `"[fd00::1]:8000-8100"`,
 * `"fd00::/8:443"` (a single IPv6 address takes ports only in brackets: `"fd00::1"` has none).
 */
export type EgressRuleInput = string | { host: string; ports?: "*" | PortSpec[] };

const maxRules = 1000;
const maxHostLength = 253;

/** Validate a rule and bring it to its normal form, or say what is wrong with it. */
export function normalizeRule(input: EgressRuleInput): { rule: EgressRule } | { error: string } {
  let hostText: string;
  let portsInput: "*" | PortSpec[] | undefined;
  if (typeof input === "string") {
    const split = splitRuleString(input.trim());
    if ("error" in split) return split;
    hostText = split.host;
    portsInput = split.ports;
  } else {
    hostText = input.host.trim();
    portsInput = input.ports;
  }
  const host = normalizeRuleHost(hostText);
  if ("error" in host) return host;
  if (portsInput === undefined) return { rule: { host: host.host } };
  if (portsInput === "*") return { rule: { host: host.host, ports: "*" } };
  const ports: PortSpec[] = [];
  for (const spec of portsInput) {
    const range = parsePortSpec(spec);
    if (range === undefined) {
      return {
        error: `${JSON.stringify(spec)} is not a port or port range (use 1-65535, "8000-8100" or "*")`,
      };
    }
    ports.push(range.from === range.to ? range.from : `${range.from}-${range.to}`);
  }
  if (ports.length === 0)
    return { error: `rule ${JSON.stringify(hostText)} has an empty port list` };
  return { rule: { host: host.host, ports } };
}

function splitRuleString(
  text: string,
): { host: string; ports?: "*" | PortSpec[] } | { error: string } {
  let host = text;
  let portsText: string | undefined;
  if (text.startsWith("[")) {
    const match = /^\[([^\]]+)\](\/\d{1,3})?(?::(.+))?$/.exec(text);
    if (match === null) return { error: `${JSON.stringify(text)}: expected "[ipv6]:ports"` };
    host = `${match[1] ?? ""}${match[2] ?? ""}`;
    portsText = match[3];
  } else if (/^[^/]+\/\d{1,3}:[^/]+$/.test(text)) {
    // A CIDR's prefix ends the address part, so `2606:4700::/32:443` is unambiguous.
    const colon = text.indexOf(":", text.indexOf("/"));
    host = text.slice(0, colon);
    portsText = text.slice(colon + 1);
  } else if ((text.match(/:/g) ?? []).length === 1) {
    const colon = text.indexOf(":");
    host = text.slice(0, colon);
    portsText = text.slice(colon + 1);
  }
  if (portsText === undefined) return { host };
  if (portsText === "*") return { host, ports: "*" };
  return { host, ports: portsText.split(",").map((part) => part.trim()) };
}

const labelPattern = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/** Lower-case ASCII form of a host name without its trailing dot, or undefined if it is not one. */
export function normalizeHostName(text: string): string | undefined {
  const trimmed = text.endsWith(".") ? text.slice(0, -1) : text;
  const ascii = /^[\x21-\x7e]*$/.test(trimmed) ? trimmed.toLowerCase() : domainToASCII(trimmed);
  if (ascii === "" || ascii.length > maxHostLength) return undefined;
  return ascii.split(".").every((label) => labelPattern.test(label)) ? ascii : undefined;
}

function normalizeRuleHost(text: string): { host: string } | { error: string } {
  const quoted = JSON.stringify(text);
  if (text === "" || text === "*") {
    return { error: `${quoted} is not a host; to allow every host use the mode "allow-all"` };
  }
  if (text.includes("/") || parseIp(text) !== undefined) {
    const range = parseCidr(text);
    if (range === undefined) return { error: `${quoted} is not a valid IP address or CIDR range` };
    return { host: formatRange(range) };
  }
  const wildcard = text.startsWith("*.");
  const name = normalizeHostName(wildcard ? text.slice(2) : text);
  if (name === undefined) {
    return {
      error: text.includes("*")
        ? `${quoted}: a wildcard may only be the whole first label, as in "*.example.com"`
        : `${quoted} is not a valid host name, IP address or CIDR range`,
    };
  }
  if (wildcard && !name.includes(".")) {
    return { error: `${quoted} is too broad; a wildcard needs at least two labels after it` };
  }
  return { host: wildcard ? `*.${name}` : name };
}

interface PortRange {
  from: number;
  to: number;
}

function parsePortSpec(spec: PortSpec): PortRange | undefined {
  const valid = (port: number): boolean => Number.isInteger(port) && port >= 1 && port <= 65535;
  if (typeof spec === "number") return valid(spec) ? { from: spec, to: spec } : undefined;
  const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(spec.trim());
  if (match === null) return undefined;
  const from = Number(match[1]);
  const to = match[2] === undefined ? from : Number(match[2]);
  return valid(from) && valid(to) && from <= to ? { from, to } : undefined;
}

const portSpecSchema = z.union([z.number(), z.string()]);
const ruleSchema = z
  .union([
    z.string(),
    z
      .object({
        host: z.string(),
        ports: z.union([z.literal("*"), z.array(portSpecSchema)]).optional(),
      })
      .strict(),
  ])
  .transform((input, context): EgressRule => {
    const result = normalizeRule(input);
    if ("error" in result) {
      context.addIssue({ code: "custom", message: result.error });
      return z.NEVER;
    }
    return result.rule;
  });

/** The policy format, as stored with a computer and accepted by the API. */
export const egressPolicySchema = z
  .object({
    mode: z.enum(egressModes),
    allow: z.array(ruleSchema).max(maxRules).default([]),
    deny: z.array(ruleSchema).max(maxRules).default([]),
  })
  .strict();

/** A policy as written by a user (rules may be strings; `allow` and `deny` may be omitted). */
export type EgressPolicyInput = z.input<typeof egressPolicySchema>;
/** A validated policy in normal form. */
export type EgressPolicy = z.output<typeof egressPolicySchema>;

/** Validate a policy; throws InvalidRequestError naming each bad field and how to fix it. */
export function parseEgressPolicy(input: unknown): EgressPolicy {
  const result = egressPolicySchema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const path = issue.path.map((part) =>
      typeof part === "number" ? `[${part}]` : `.${String(part)}`,
    );
    return `${path.join("").replace(/^\./, "") || "policy"}: ${issue.message}`;
  });
  throw new InvalidRequestError(`egress policy is invalid: ${problems.join("; ")}`, {
    issues: result.error.issues.map(({ path, message }) => ({ path, message })),
  });
}

type RuleTarget =
  | { kind: "domain"; name: string }
  | { kind: "wildcard"; suffix: string }
  | { kind: "ip"; range: IpRange };

interface CompiledRule {
  /** The rule as the user would recognise it, for messages. */
  text: string;
  target: RuleTarget;
  ports: readonly PortRange[] | "all";
  /** For IP rules: the class of all of its range (A4); `public` ones reach public addresses only (P5). */
  scope: AddressClass;
}

/** A policy prepared for matching. Build one per policy change, not per request. */
export interface CompiledPolicy {
  readonly policy: EgressPolicy;
  readonly mode: EgressMode;
  readonly allowNames: readonly CompiledRule[];
  readonly allowIps: readonly CompiledRule[];
  readonly denyNames: readonly CompiledRule[];
  readonly denyIps: readonly CompiledRule[];
}

function compileRule(rule: EgressRule, defaultPorts: readonly PortRange[] | "all"): CompiledRule {
  const ports =
    rule.ports === undefined
      ? defaultPorts
      : rule.ports === "*"
        ? "all"
        : rule.ports.map((spec) => parsePortSpec(spec) ?? { from: 0, to: -1 });
  const text = rule.ports === undefined ? rule.host : `${rule.host}:${formatPorts(ports)}`;
  if (rule.host.startsWith("*.")) {
    return {
      text,
      target: { kind: "wildcard", suffix: rule.host.slice(1) },
      ports,
      scope: "public",
    };
  }
  const range = parseCidr(rule.host);
  if (range !== undefined)
    return { text, target: { kind: "ip", range }, ports, scope: classifyRange(range) };
  return { text, target: { kind: "domain", name: rule.host }, ports, scope: "public" };
}

const webPorts: readonly PortRange[] = defaultHostPorts.map((port) => ({ from: port, to: port }));

/**
 * Compile a validated policy. `defaults` is the built-in list used by `defaults-and-allowlist`.
 * @default defaults defaultHosts (defaults.ts)
 */
export function compilePolicy(
  policy: EgressPolicy,
  options: { defaults?: readonly string[] } = {},
): CompiledPolicy {
  const allow = policy.allow.map((rule) => compileRule(rule, webPorts)); // P6
  const deny = policy.deny.map((rule) => compileRule(rule, "all")); // P6
  if (policy.mode === "defaults-and-allowlist") {
    for (const host of options.defaults ?? defaultHosts)
      allow.push(compileRule({ host }, webPorts));
  }
  return {
    policy,
    mode: policy.mode,
    allowNames: allow.filter((rule) => rule.target.kind !== "ip"),
    allowIps: allow.filter((rule) => rule.target.kind === "ip"),
    denyNames: deny.filter((rule) => rule.target.kind !== "ip"),
    denyIps: deny.filter((rule) => rule.target.kind === "ip"),
  };
}

function portMatches(ports: CompiledRule["ports"], port: number): boolean {
  return ports === "all" || ports.some((range) => port >= range.from && port <= range.to);
}

function formatPorts(ports: CompiledRule["ports"]): string {
  if (ports === "all") return "*";
  return ports
    .map((range) => (range.from === range.to ? `${range.from}` : `${range.from}-${range.to}`))
    .join(",");
}

function nameMatches(target: RuleTarget, name: string): boolean {
  switch (target.kind) {
    case "domain":
      return target.name === name;
    case "wildcard":
      return name.endsWith(target.suffix); // suffix keeps its leading dot: subdomains only
    case "ip":
      return false;
  }
}

/** Why a destination was refused; `message` is shown to the computer's user as-is. */
export interface EgressDenial {
  code:
    | "no-network"
    | "deny-rule"
    | "not-allowed"
    | "port-not-allowed"
    | "private-address"
    | "special-address"
    | "host-address"
    | "platform-port";
  message: string;
}

/** A destination as requested: a normalized host name or IP address, and a port. */
export interface EgressTarget {
  host: string;
  port: number;
}

/** What the operator's configuration and the host decide, beyond a computer's policy (P3, P4). */
export interface DestinationContext {
  /** Whether this (canonical) address belongs to one of the host's interfaces. */
  isHostAddress(address: string): boolean;
  /** Private ranges the operator opened for computers (P4). */
  readonly allowPrivate: readonly IpRange[];
  /** Whether the port is one of Roost's own (API, Restate, service endpoint, store). */
  isPlatformPort(port: number): boolean;
}

/** `host:port`, with brackets around an IPv6 address. */
export function formatTarget(target: EgressTarget): string {
  return target.host.includes(":")
    ? `[${target.host}]:${target.port}`
    : `${target.host}:${target.port}`;
}

const settingsHint = "in the computer's network settings";
const operatorSetting = "ROOST_EGRESS_ALLOW_PRIVATE";

function notAllowed(policy: CompiledPolicy, target: EgressTarget, hint = ""): EgressDenial {
  return {
    code: "not-allowed",
    message: `roost egress: ${formatTarget(target)} is not on this computer's allowlist (policy: ${policy.mode}).${hint} Add it ${settingsHint}.`,
  };
}

function portNotAllowed(
  policy: CompiledPolicy,
  target: EgressTarget,
  rule: CompiledRule,
): EgressDenial {
  return {
    code: "port-not-allowed",
    message: `roost egress: ${formatTarget(target)}: port ${target.port} is not allowed by the rule "${rule.text}" (allowed ports: ${formatPorts(rule.ports)}; policy: ${policy.mode}). Add a rule with this port ${settingsHint}.`,
  };
}

function deniedByRule(
  policy: CompiledPolicy,
  target: EgressTarget,
  rule: CompiledRule,
): EgressDenial {
  return {
    code: "deny-rule",
    message: `roost egress: ${formatTarget(target)} is blocked by the deny rule "${rule.text}" (policy: ${policy.mode}). Remove that rule ${settingsHint} to allow it.`,
  };
}

/** The verdict on a name before it is resolved. */
export type NameVerdict =
  | { allowed: false; denial: EgressDenial }
  /** `byName`: allowed by a domain rule or by `allow-all`; a literal address is judged by IP rules. */
  | { allowed: true; byName: boolean };

/**
 * First check, before any DNS lookup: a name is allowed (and so resolved) only when a domain
 * rule, a wildcard, the defaults or `allow-all` allow it (P7).
 */
export function checkName(policy: CompiledPolicy, target: EgressTarget): NameVerdict {
  if (policy.mode === "none") return { allowed: false, denial: noNetwork(target) }; // P1
  if (parseIp(target.host) !== undefined)
    return { allowed: true, byName: policy.mode === "allow-all" };
  const denied = policy.denyNames.find(
    (rule) => nameMatches(rule.target, target.host) && portMatches(rule.ports, target.port),
  );
  if (denied !== undefined) return { allowed: false, denial: deniedByRule(policy, target, denied) }; // P2
  if (policy.mode === "allow-all") return { allowed: true, byName: true };
  const named = policy.allowNames.filter((rule) => nameMatches(rule.target, target.host));
  if (named.some((rule) => portMatches(rule.ports, target.port)))
    return { allowed: true, byName: true };
  const [portRule] = named;
  if (portRule !== undefined)
    return { allowed: false, denial: portNotAllowed(policy, target, portRule) };
  // P7: IP rules match addresses; they never make the proxy resolve a name.
  const ipHint = policy.allowIps.some((rule) => portMatches(rule.ports, target.port))
    ? " IP rules match requests for those addresses, not names (names are looked up only for domain rules)."
    : "";
  return { allowed: false, denial: notAllowed(policy, target, ipHint) };
}

const classLabels: Record<AddressClass, string> = {
  public: "public",
  private: "private",
  loopback: "loopback",
  "link-local": "link-local",
  cgnat: "carrier-grade NAT (100.64.0.0/10)",
  multicast: "multicast",
  unspecified: "unspecified",
  broadcast: "broadcast",
  documentation: "documentation-only",
  reserved: "reserved",
};

/**
 * Second check, for one address a name resolved to (or the literal address requested).
 * `byName` comes from `checkName`. Returns undefined when the address may be connected to.
 */
export function checkAddress(
  policy: CompiledPolicy,
  target: EgressTarget,
  address: string,
  byName: boolean,
  context: DestinationContext,
): EgressDenial | undefined {
  const ip = parseIp(address);
  const literal = parseIp(target.host) !== undefined;
  const where = literal
    ? `${formatTarget(target)} is`
    : `${formatTarget(target)} resolves to ${address},`;
  if (ip === undefined) {
    return { code: "not-allowed", message: `roost egress: ${where} not a valid address.` };
  }
  const denied = policy.denyIps.find(
    (rule) =>
      rule.target.kind === "ip" &&
      rangeContains(rule.target.range, ip) &&
      portMatches(rule.ports, target.port),
  );
  if (denied !== undefined) return deniedByRule(policy, target, denied); // P2
  if (policy.mode === "none") return noNetwork(target); // P1

  const addressClass = classifyAddress(address);
  // P3: nothing opens these.
  if (
    addressClass === "loopback" ||
    addressClass === "unspecified" ||
    context.isHostAddress(address)
  ) {
    return {
      code: "host-address",
      message: `roost egress: ${where} an address of the Roost host itself; a computer can never reach it, whatever its policy says.`,
    };
  }
  if (unreachableClasses.has(addressClass)) {
    return {
      code: "special-address",
      message: `roost egress: ${where} a ${classLabels[addressClass]} address; a computer can never reach those, whatever its policy says.`,
    };
  }
  if (addressClass !== "public" && context.isPlatformPort(target.port)) {
    return {
      code: "platform-port",
      message: `roost egress: ${formatTarget(target)}: port ${target.port} is one of Roost's own ports, which a computer can never reach on a non-public address.`,
    };
  }

  if (addressClass === "public") {
    const rules = matchIpRules(policy, ip, target.port, false);
    if (rules.kind === "match" || policy.mode === "allow-all" || byName) return undefined;
    if (rules.kind === "port") return portNotAllowed(policy, target, rules.rule);
    return notAllowed(policy, target);
  }
  // P4
  if (
    operatorClasses.has(addressClass) &&
    !context.allowPrivate.some((range) => rangeContains(range, ip))
  ) {
    return {
      code: "private-address",
      message: `roost egress: ${where} a ${classLabels[addressClass]} address; computers reach private addresses only in ranges the operator opened (${operatorSetting}), and this one is not.`,
    };
  }
  // P5
  const rules = matchIpRules(policy, ip, target.port, true);
  if (rules.kind === "match") return undefined;
  if (rules.kind === "port") return portNotAllowed(policy, target, rules.rule);
  if (!byName) return notAllowed(policy, target);
  return {
    code: "private-address",
    message: `roost egress: ${where} a ${classLabels[addressClass]} address; those are refused unless an IP rule allows that address or its range explicitly. Add "${address}" as an allow rule ${settingsHint} if this is intended.`,
  };
}

function noNetwork(target: EgressTarget): EgressDenial {
  return {
    code: "no-network",
    message: `roost egress: ${formatTarget(target)} refused: this computer has no network access (policy: none). Change the policy ${settingsHint}.`,
  };
}

function matchIpRules(
  policy: CompiledPolicy,
  ip: ParsedIp,
  port: number,
  nonPublic: boolean,
): { kind: "match" } | { kind: "port"; rule: CompiledRule } | { kind: "none" } {
  let portMismatch: CompiledRule | undefined;
  for (const rule of policy.allowIps) {
    if (rule.target.kind !== "ip" || !rangeContains(rule.target.range, ip)) continue;
    if (nonPublic && rule.scope === "public") continue; // P5: broad ranges stay public
    if (portMatches(rule.ports, port)) return { kind: "match" };
    portMismatch ??= rule;
  }
  return portMismatch === undefined ? { kind: "none" } : { kind: "port", rule: portMismatch };
}

/**
 * Both checks for a destination whose addresses are known: refused if the name is refused or if
 * ANY of the addresses is. Used by the proxy's re-checks and by tests.
 */
export function checkDestination(
  policy: CompiledPolicy,
  target: EgressTarget,
  addresses: readonly string[],
  context: DestinationContext,
): EgressDenial | undefined {
  const verdict = checkName(policy, target);
  if (!verdict.allowed) return verdict.denial;
  for (const address of addresses) {
    const denial = checkAddress(policy, target, address, verdict.byName, context);
    if (denial !== undefined) return denial;
  }
  return undefined;
}

/**
 * P8: validate a policy a user sets for their computer. On top of `parseEgressPolicy`, every
 * allow rule must be able to reach something: a rule inside the ranges P3 refuses, or inside a
 * private range the operator did not open (P4), is refused with the reason. Broad ranges
 * (`0.0.0.0/0`, `::/0`) and `allow-all` are accepted: they reach public addresses only.
 * Throws InvalidRequestError.
 */
export function parseUserEgressPolicy(input: unknown, context: DestinationContext): EgressPolicy {
  const policy = parseEgressPolicy(input);
  const problems = policy.allow.flatMap((rule, index) => {
    const problem = unreachableRule(rule, context);
    return problem === undefined ? [] : [{ path: ["allow", index], message: problem }];
  });
  if (problems.length > 0) {
    throw new InvalidRequestError(
      `egress policy refused: ${problems.map((problem) => `allow[${String(problem.path[1])}]: ${problem.message}`).join("; ")}`,
      { issues: problems },
    );
  }
  return policy;
}

function unreachableRule(rule: EgressRule, context: DestinationContext): string | undefined {
  const quoted = JSON.stringify(rule.host);
  const bareName = rule.host.startsWith("*.") ? rule.host.slice(2) : rule.host;
  if (bareName === "localhost" || bareName.endsWith(".localhost")) {
    return `${quoted} names loopback (RFC 6761); a computer can never reach the Roost host itself`;
  }
  const range = parseCidr(rule.host);
  if (range === undefined) return undefined; // a domain rule: judged by what it resolves to
  const scope = classifyRange(range);
  if (scope === "public") return undefined; // broad or public: reaches public addresses only
  if (scope === "loopback" || scope === "unspecified") {
    return `${quoted} is ${classLabels[scope]}: the Roost host itself, which a computer can never reach`;
  }
  if (unreachableClasses.has(scope)) {
    return `${quoted} is ${classLabels[scope]}${scope === "link-local" ? " (this includes cloud metadata services such as 169.254.169.254)" : ""}; a computer can never reach those addresses`;
  }
  if (isSingleAddress(range) && context.isHostAddress(formatRange(range))) {
    return `${quoted} is an address of the Roost host itself, which a computer can never reach`;
  }
  if (
    operatorClasses.has(scope) &&
    !context.allowPrivate.some((opened) => rangesOverlap(opened, range))
  ) {
    return `${quoted} is a ${classLabels[scope]} range; only the operator can open private ranges for computers (${operatorSetting}), and this server opens none that overlaps it`;
  }
  const ports = rule.ports === undefined ? defaultHostPorts : rule.ports === "*" ? [] : rule.ports;
  if (
    ports.length > 0 &&
    ports.every((port) => typeof port === "number" && context.isPlatformPort(port))
  ) {
    return `${quoted}: ${ports.join(", ")} ${ports.length === 1 ? "is one of Roost's own ports" : "are Roost's own ports"}, which a computer can never reach on a non-public address`;
  }
  return undefined;
}
