/**
 * A bot's tool policy (issue 12 §1, docs/approvals.md): rules of `{tool, match?, unless?,
 * decision}` and the documented defaults, and how a call is judged against them.
 *
 * Invariants:
 *   POL1 deny beats ask, ask beats allow, among the rules that match a call.
 *   POL2 the bot's own rules are a layer above the defaults: when one of its rules matches a
 *        call, that layer decides; the defaults decide only calls none of its rules match. An
 *        owner's explicit (or remembered) allow can so override a default ask; nothing else can.
 *   POL3 a call no rule matches is allowed.
 *   POL4 a policy is validated whole (`parseToolPolicy`): a bad one is an InvalidRequestError that
 *        names the rule and says how to fix it; nothing is stored.
 *   POL5 shell patterns are matched against every simple command of the line (split at `;`,
 *        `&&`, `||`, `|`, newlines), `*` never spans whitespace, and an `unless` exempts only a
 *        command it matches whole and that has no `..` in it.
 */
import { posix } from "node:path";
import { z } from "zod";
import { InvalidRequestError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";

/** Rules one bot may have. */
export const maxPolicyRules = 100;
const maxPatternChars = 500;

/** POL2: the defaults, applied under the bot's own rules unless `useDefaults` is false. */
export const defaultToolRules: readonly Api.ToolPolicyRule[] = [
  // Recursive deletes, except of things under /tmp (which does not survive a sleep anyway).
  { tool: "shell", match: "rm -*r*", unless: "rm -*r* /tmp/*", decision: "ask" },
  { tool: "shell", match: "rm -*R*", unless: "rm -*R* /tmp/*", decision: "ask" },
  { tool: "shell", match: "rm --recursive*", decision: "ask" },
  // Rewriting a remote's history.
  { tool: "shell", match: "git push --force*", decision: "ask" },
  { tool: "shell", match: "git push -f*", decision: "ask" },
  // Anything that sends on the owner's behalf, and routine and trigger writes (tools named so).
  { tool: "send_*", decision: "ask" },
  { tool: "routine_*", decision: "ask" },
  { tool: "trigger_*", decision: "ask" },
];

export const emptyToolPolicy: Api.ToolPolicy = { rules: [], useDefaults: true, reviewModel: null };

const patternText = z
  .string()
  .min(1, { error: "must not be empty; leave it out to match every call of the tool" })
  .max(maxPatternChars, { error: `must be at most ${maxPatternChars} characters` });

const ruleSchema = z.strictObject({
  tool: z.string().regex(/^[A-Za-z0-9_.:*-]{1,100}$/, {
    error: "tool must be a tool name or a glob such as mcp_* (letters, digits, _ . : - and *)",
  }),
  match: patternText.optional(),
  unless: patternText.optional(),
  decision: z.enum(["allow", "ask", "deny"], { error: "decision must be allow, ask or deny" }),
});

const policySchema = z.strictObject({
  rules: z
    .array(ruleSchema)
    .max(maxPolicyRules, { error: `a policy has at most ${maxPolicyRules} rules` }),
  useDefaults: z.boolean({ error: "useDefaults must be true or false" }).default(true),
  reviewModel: z
    .string()
    .min(1)
    .max(200)
    .nullable()
    .default(null)
    .or(z.undefined().transform(() => null)),
});

/** POL4: the whole policy or an InvalidRequestError naming what is wrong. */
export function parseToolPolicy(input: unknown): Api.ToolPolicy {
  const parsed = policySchema.safeParse(input);
  if (!parsed.success)
    throw new InvalidRequestError(
      parsed.error.issues
        .map((issue) => `${issue.path.join(".") || "body"}: ${issue.message}`)
        .join("; ") +
        ' (expected {"rules":[{"tool":"shell","match":"git push*","decision":"ask"}],"useDefaults":true,"reviewModel":null})',
      {
        issues: parsed.error.issues.map((issue) => ({
          path: issue.path.join("."),
          message: issue.message,
        })),
      },
    );
  const rules = parsed.data.rules.map((rule) => {
    const clean: Api.ToolPolicyRule = { tool: rule.tool, decision: rule.decision };
    if (rule.match !== undefined) clean.match = rule.match;
    if (rule.unless !== undefined) clean.unless = rule.unless;
    return clean;
  });
  return { rules, useDefaults: parsed.data.useDefaults, reviewModel: parsed.data.reviewModel };
}

/** Checks one `remember` pattern the way a rule's `match` is checked. */
export function parseRememberPattern(input: string): string {
  const parsed = patternText.safeParse(input);
  if (!parsed.success)
    throw new InvalidRequestError(`remember ${parsed.error.issues[0]?.message ?? "is invalid"}`, {
      issues: [{ path: "remember", message: parsed.error.issues[0]?.message ?? "invalid" }],
    });
  return parsed.data;
}

type Field = { kind: "command" | "path" | "host" | "text"; values: string[] };

const fileTools = new Set(["read", "write", "edit", "list"]);

const escape = (text: string) => text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");

function globRegex(pattern: string, star: string, doubleStar: string): string {
  return pattern
    .split("**")
    .map((part) => part.split("*").map(escape).join(star))
    .join(doubleStar);
}

const toolMatches = (pattern: string, name: string) =>
  new RegExp(`^${globRegex(pattern, ".*", ".*")}$`).test(name);

/** POL5: the simple commands of a shell line. */
export function commandsOf(line: string): string[] {
  return line
    .split(/\|\||&&|[;|\n]/)
    .map((part) => part.trim().replace(/^(sudo\s+|env\s+|[A-Za-z_][A-Za-z0-9_]*=\S*\s+)+/, ""))
    .filter((part) => part !== "");
}

function hostOf(value: string): string | undefined {
  try {
    return new URL(value).hostname.toLowerCase();
  } catch {
    return /^[A-Za-z0-9.-]+$/.test(value) ? value.toLowerCase() : undefined;
  }
}

const stringField = (input: unknown, name: string): string | undefined => {
  if (typeof input !== "object" || input === null) return undefined;
  const value = (input as Record<string, unknown>)[name];
  return typeof value === "string" ? value : undefined;
};

/** What a rule's `match` is checked against, by tool (docs/approvals.md "Patterns"). */
export function fieldOf(tool: string, input: unknown): Field {
  if (tool === "shell") {
    const command = stringField(input, "command");
    return { kind: "command", values: command === undefined ? [] : commandsOf(command) };
  }
  if (fileTools.has(tool) || tool === "glob") {
    const path = stringField(input, tool === "glob" ? "pattern" : "path");
    return { kind: "path", values: path === undefined ? [] : [posix.normalize(path)] };
  }
  if (tool.startsWith("browser") || tool === "web_fetch" || tool === "fetch") {
    const target = stringField(input, "url") ?? stringField(input, "host");
    const host = target === undefined ? undefined : hostOf(target);
    return { kind: "host", values: host === undefined ? [] : [host] };
  }
  return { kind: "text", values: [JSON.stringify(input ?? null)] };
}

function patternMatches(pattern: string, field: Field, whole: boolean): boolean {
  switch (field.kind) {
    case "command": {
      // POL5: a prefix at a word boundary; `*` stays within a word.
      const body = globRegex(pattern, "\\S*", "\\S*");
      const regex = new RegExp(whole ? `^${body}$` : `^${body}(?=\\s|$)`);
      return field.values.some((command) => regex.test(command));
    }
    case "path":
      return field.values.some((path) =>
        new RegExp(`^${globRegex(pattern, "[^/]*", ".*")}$`).test(path),
      );
    case "host":
      return field.values.some((host) =>
        new RegExp(`^${globRegex(pattern.toLowerCase(), "[^.]*", ".*")}$`).test(host),
      );
    case "text":
      return field.values.some((text) => new RegExp(globRegex(pattern, ".*", ".*")).test(text));
    default: {
      const unknown: never = field.kind;
      return unknown;
    }
  }
}

function exempt(unless: string, field: Field): boolean {
  if (field.kind !== "command") return patternMatches(unless, field, true);
  // POL5: every matching command must be exempt on its own, and none may climb out with `..`.
  return field.values.length > 0 && field.values.every((command) => !command.includes(".."))
    ? field.values.every((command) =>
        patternMatches(unless, { kind: "command", values: [command] }, true),
      )
    : false;
}

function ruleMatches(rule: Api.ToolPolicyRule, tool: string, field: Field): boolean {
  if (!toolMatches(rule.tool, tool)) return false;
  if (rule.match !== undefined && !patternMatches(rule.match, field, false)) return false;
  if (rule.unless !== undefined) {
    // The exemption looks only at the commands the rule matched.
    const matched =
      field.kind === "command" && rule.match !== undefined
        ? {
            kind: field.kind,
            values: field.values.filter((command) =>
              patternMatches(rule.match!, { kind: "command", values: [command] }, false),
            ),
          }
        : field;
    if (exempt(rule.unless, matched)) return false;
  }
  return true;
}

export interface PolicyVerdict {
  decision: Api.ToolDecision;
  /** The rule that decided; none when no rule matched (POL3). */
  rule: Api.ToolPolicyRule | null;
  /** Whether it was one of the defaults. */
  isDefault: boolean;
}

const rank: Record<Api.ToolDecision, number> = { allow: 0, ask: 1, deny: 2 };

/** POL1, POL2, POL3: the decision of a policy on one call. */
export function judgeCall(policy: Api.ToolPolicy, tool: string, input: unknown): PolicyVerdict {
  const field = fieldOf(tool, input);
  const layers: [readonly Api.ToolPolicyRule[], boolean][] = [[policy.rules, false]];
  if (policy.useDefaults) layers.push([defaultToolRules, true]);
  for (const [rules, isDefault] of layers) {
    let best: Api.ToolPolicyRule | null = null;
    for (const rule of rules)
      if (
        ruleMatches(rule, tool, field) &&
        (best === null || rank[rule.decision] > rank[best.decision])
      )
        best = rule; // POL1
    if (best !== null) return { decision: best.decision, rule: best, isDefault }; // POL2
  }
  return { decision: "allow", rule: null, isDefault: false }; // POL3
}

/** The stronger of two decisions (POL1): the review model's ask beats the policy's allow. */
export function stronger(a: Api.ToolDecision, b: Api.ToolDecision): Api.ToolDecision {
  return rank[a] >= rank[b] ? a : b;
}

/** A sentence for the approval card and the model: which rule decided. */
export function describeRule(rule: Api.ToolPolicyRule, isDefault: boolean): string {
  const what =
    rule.match === undefined ? `every ${rule.tool} call` : `${rule.tool} "${rule.match}"`;
  const except = rule.unless === undefined ? "" : ` (except "${rule.unless}")`;
  const verb = { allow: "allows", ask: "asks before", deny: "denies" }[rule.decision];
  return `${isDefault ? "the default policy" : "this bot's policy"} ${verb} ${what}${except}`;
}
