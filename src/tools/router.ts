/**
 * The tool router (ARCHITECTURE.md §13 "Tool sources"): composes several sources — server tools,
 * computer tools, later MCP, browser and helper tools — into the one tool set of a turn. Each
 * source owns its specs, its execution (journaling its own work through the call's durable
 * context) and its result formatting. The router adds what every call passes through:
 *
 *   TOOL1 the tool set is fixed for the whole turn: `specs` is called once per turn (load-context)
 *         and a name belongs to exactly one source (a clash is a configuration error).
 *   TOOL2 one policy hook runs before every call: allow, ask or deny. `deny` never runs the
 *         tool; `ask` goes to the `ask` hook (approvals) and runs the tool only if it allows.
 *         Its decision is journaled, so a replay never asks twice.
 *   TOOL3 one redaction hook runs on every result before it is journaled or shown, and on live
 *         output; nothing a source returns reaches the model, the store or an event unredacted.
 *         Its `prepare` runs before every call (outside the journal: it may hold secret values),
 *         so the hook sees the account's current secrets; live output passes a stream redactor
 *         that holds back what could be the start of a value split across chunks.
 *   TOOL4 every spec's description plus JSON schema stays within `maxToolSpecChars` (4,000):
 *         an oversized spec is a bug of its source and fails `specs` loudly.
 */
import { maxToolSpecChars, toolSpecChars, type ToolSpec } from "../models/index.ts";
import type { DurableContext } from "../engine/index.ts";
import type { Api } from "../protocol/index.ts";
import type {
  ToolCallContext,
  ToolCallRequest,
  ToolResult,
  ToolRouter,
  ToolTurnContext,
} from "./types.ts";

/** What a source offers and does. */
export interface ToolSource {
  /** Names the source in errors and logs, e.g. `computer`. */
  readonly name: string;
  specs(context: ToolTurnContext): Promise<ToolSpec[]>;
  /** Runs one call; every side effect goes through `context.run` or `context.durable` (journaled). */
  execute(name: string, input: unknown, context: ToolCallContext): Promise<ToolResult>;
  /** The turn is over: release what the source held for it (journaled through `durable`). */
  endTurn?(context: ToolTurnContext & { durable: DurableContext }): Promise<void>;
}

export type PolicyDecision =
  | { decision: "allow" }
  | { decision: "deny"; reason: string }
  | { decision: "ask"; reason: string; review?: Api.ReviewVerdict | null };

/** TOOL2: decides before a call runs. Pure of side effects; it runs inside a journaled step. */
export type PolicyHook = (
  call: { name: string; input: unknown; source: string },
  context: ToolTurnContext,
) => Promise<PolicyDecision>;

/** TOOL2: asks a person (approvals); resolves to the answer, after a durable wait. */
export type AskHook = (
  call: {
    name: string;
    input: unknown;
    source: string;
    reason: string;
    /** The review model's verdict, when one judged the call (shown on the approval card). */
    review: Api.ReviewVerdict | null;
    /** Who must answer, when not the route's approver (a consent card: the credential's owner). */
    approverAccountId?: string;
  },
  context: ToolCallRequest,
) => Promise<{ decision: "allow" } | { decision: "deny"; reason: string }>;

/** TOOL3: returns `value` with every secret replaced. Must be pure and idempotent. */
export type RedactionHook = <T>(value: T, context: ToolTurnContext) => T;

/** TOOL3: one stream of live output: `push` answers what is safe to show now, `end` the rest. */
export interface OutputRedaction {
  push(chunk: string): string;
  end(): string;
}

export interface ToolRouterOptions {
  sources: readonly ToolSource[];
  /** @default allow everything */
  policy?: PolicyHook;
  /** @default an `ask` is denied with its reason (no approvals configured) */
  ask?: AskHook;
  /** @default nothing to redact */
  redact?: RedactionHook;
  /** TOOL3: runs before every call so `redact` knows the current secrets. @default nothing */
  prepareRedaction?: (context: ToolTurnContext) => Promise<void>;
  /** TOOL3: a redactor for one stream of live output. @default `redact` on each chunk */
  redactStream?: (context: ToolTurnContext) => OutputRedaction;
}

const identity: RedactionHook = (value) => value;

export function createToolRouter(options: ToolRouterOptions): ToolRouter {
  const redact = options.redact ?? identity;
  // Which source serves which tool, per turn (TOOL1); refreshed by `specs`.
  const owners = new Map<string, Map<string, ToolSource>>();

  async function ownersFor(context: ToolTurnContext): Promise<Map<string, ToolSource>> {
    const known = owners.get(context.turnId);
    if (known !== undefined) return known;
    await collect(context);
    return owners.get(context.turnId)!;
  }

  async function collect(context: ToolTurnContext): Promise<ToolSpec[]> {
    const byName = new Map<string, ToolSource>();
    const all: ToolSpec[] = [];
    for (const source of options.sources) {
      for (const spec of await source.specs(context)) {
        const clash = byName.get(spec.name);
        if (clash !== undefined)
          throw new Error(
            `tool ${JSON.stringify(spec.name)} is offered by both the ${clash.name} and the ${source.name} tool sources`,
          );
        const size = toolSpecChars(spec);
        if (size > maxToolSpecChars)
          throw new Error(
            `tool ${spec.name} of the ${source.name} source is ${size} characters of description and schema, over the ${maxToolSpecChars} limit`,
          ); // TOOL4
        byName.set(spec.name, source);
        all.push(spec);
      }
    }
    owners.set(context.turnId, byName);
    return all;
  }

  return {
    specs: collect,

    async execute(name, input, context: ToolCallRequest): Promise<ToolResult> {
      const source = (await ownersFor(context)).get(name);
      if (source === undefined)
        return { output: `There is no tool named ${JSON.stringify(name)}.`, isError: true };
      await options.prepareRedaction?.(context); // TOOL3

      if (options.policy !== undefined) {
        const policy = options.policy;
        const verdict = await context.durable.step(`policy:${name}`, () =>
          policy({ name, input, source: source.name }, context),
        ); // TOOL2
        if (verdict.decision === "deny")
          return {
            output: `Not allowed: ${verdict.reason}`,
            isError: true,
            details: { policy: verdict },
          };
        if (verdict.decision === "ask") {
          const answer =
            options.ask === undefined
              ? {
                  decision: "deny" as const,
                  reason: `${verdict.reason} (no one can approve it here)`,
                }
              : await options.ask(
                  {
                    name,
                    input,
                    source: source.name,
                    reason: verdict.reason,
                    review: verdict.review ?? null,
                  },
                  context,
                );
          if (answer.decision === "deny")
            return {
              output: `Not approved: ${answer.reason}`,
              isError: true,
              details: { policy: answer },
            };
          // TOOL3: the answer may have lent the call more secrets (a consent card, teams/
          // CONS2), and time passed: load the current ones before the call runs.
          await options.prepareRedaction?.(context);
        }
      }

      const scoped: ToolCallContext = {
        ...context,
        redact: (value) => redact(value, context), // TOOL3
        redactStream: () =>
          options.redactStream?.(context) ?? {
            push: (chunk) => redact(chunk, context),
            end: () => "",
          },
        run: (stepName, action) =>
          context.durable.step(stepName, async (signal) =>
            redact(await action(AbortSignal.any([signal, context.signal])), context),
          ),
      };
      return redact(await source.execute(name, input, scoped), context); // TOOL3
    },

    async endTurn(context) {
      owners.delete(context.turnId);
      for (const source of options.sources) await source.endTurn?.(context);
    },
  };
}
