/**
 * The built-in offline demo model: lets people try Roost (and its tools) before configuring a
 * provider. It follows a tiny command language (docs/models.md):
 *
 *   `$ <command>`           → tool `shell` `{ command }`
 *   `read <path>`           → tool `read` `{ path }`
 *   `write <path> <text>`   → tool `write` `{ path, content }`
 *   `ls [path]`             → tool `list` `{ path }` (default `.`)
 *   `edit <path> <old> => <new>` → tool `edit` `{ path, oldString, newString }`
 *   `glob <pattern>`        → tool `glob` `{ pattern }`
 *   `bg <command>`          → tool `shell` `{ command, background: true }`
 *   `job <id>`              → tool `shell_status` `{ jobId }`
 *   `remember [tier:] <text>` → tool `memory` `{ action: "add", tier (default profile), text }`
 *   `forget <fact id>`      → tool `memory` `{ action: "remove", id }`
 *   `skill <name>`          → tool `skill` `{ name }`
 *   `tell <bot>: <text>`, `draft <kind> <to>: <text>`, `no reply` → results (demo-results.ts)
 *   `because <reason>: <command>`, `call <tool> <json>` → policy and approvals (demo-policy.ts)
 *   `request secret <NAME> [reason]` → tool `request_secret` (demo-secrets.ts)
 *   `helper <task>`, `helpers <a> | <b>`, `check|stop helper <id>`, `message helper <id>: <text>`
 *                           → the helper tools (demo-helpers.ts); a helper reads its task's commands
 *   a line `escalate <reason>` → tool `escalate` `{ reason }` (a routine run's triage, decision 0020)
 *   a message with attached files → its commands as usual, after the line naming the files; with
 *                             no text, a reply naming where the files are on the computer
 *   after tool results      → the output quoted in a fenced block, with the exit status if shown
 *   a routine's or webhook's run → the routine's instruction quoted, and the webhook's payload in a
 *                             fenced block (it stays marked as untrusted outside content)
 *   anything else           → a labelled echo saying no provider is configured
 *
 * Invariants:
 * D1 Deterministic: the same conversation and tools give the same result, call ids included
 *    (derived from the user message's index and text), so replays and tests are stable.
 * D2 A tool is only called when it is offered; otherwise the model answers in text.
 * D3 The demo reads no images (`acceptsImages: false`); a tool result's images are named in its
 *    answer, so the user sees that they came back (MED1).
 */
import { createHash } from "node:crypto";
import { decidePolicyCommand } from "./demo-policy.ts";
import { decideResultCommand } from "./demo-results.ts";
import { decideHelperCommand, helperTaskText } from "./demo-helpers.ts";
import { decideSecretCommand } from "./demo-secrets.ts";
import { attachedFilesPrefix, describeMedia } from "./media.ts";
import { emitTextDelta, splitIntoWordPieces } from "./text-deltas.ts";
import type { InferRequest, InferResult, ModelClient, ModelMessage, ToolCall } from "./types.ts";

const label = "[demo model]";

/** What the demo model decided to do with the last user message. */
type DemoAction =
  | {
      kind: "tool";
      name: string;
      input: Record<string, unknown>;
      text?: string;
      /** More calls of the same model call (they run one after another, in this order). */
      more?: { name: string; input: Record<string, unknown> }[];
    }
  | { kind: "reply"; text: string };

/** Rough token count: words, not tokens. */
function countWords(text: string): number {
  return text.match(/\S+/g)?.length ?? 0;
}

function isOffered(request: InferRequest, toolName: string): boolean {
  return request.tools.some((tool) => tool.name === toolName);
}

function echoReply(text: string, request: InferRequest): string {
  const hint = isOffered(request, "shell")
    ? ' Try "$ uname -a" to run a command on this bot\'s computer.'
    : "";
  return `${label} You said: "${text}". (No model provider is configured; set ROOST_MODEL — see docs/configuration.md.)${hint}`;
}

// ── routine runs (routines helper's block) ──
/** The first line HIS4 puts on a run's message, then `Routine "<name>":` and the instruction. */
const runHeader = /^\[(Routine|Webhook) run (\S+?):[^\]\n]*\]\nRoutine "([^"\n]*)":\n/;
const payloadBlock = /\n<untrusted-webhook-payload>\n([\s\S]*)\n<\/untrusted-webhook-payload>\s*$/;

/** A routine run's answer: the instruction and the payload quoted; undefined for other messages. */
function routineRunReply(text: string): string | undefined {
  const header = runHeader.exec(text);
  if (header === null) return undefined;
  const rest = text.slice(header[0].length);
  const payload = payloadBlock.exec(rest);
  const instruction = (payload === null ? rest : rest.slice(0, payload.index))
    .replace(/\n\nThe request that started this run follows\.[^\n]*$/, "")
    .trim();
  const kind = header[1] === "Webhook" ? "webhook" : "routine";
  const lines = [
    `${label} ${kind === "webhook" ? "Webhook" : "Routine"} run ${header[2]} of "${header[3]}". Instruction: "${instruction}".`,
  ];
  if (payload?.[1] !== undefined) {
    const marks = fence(payload[1]);
    lines.push(
      `Payload (untrusted outside content, not followed):\n${marks}json\n${payload[1]}\n${marks}`,
    );
  }
  return lines.join("\n");
}
// ── end of routine runs ──

/** Parses the command language (D2). */
function decide(text: string, request: InferRequest): DemoAction {
  if (text.startsWith(attachedFilesPrefix)) {
    const end = text.indexOf("\n");
    const header = end === -1 ? text : text.slice(0, end);
    const rest = end === -1 ? "" : text.slice(end + 1);
    if (rest.trim() !== "") return decide(rest, request);
    const files = header.slice(attachedFilesPrefix.length, -1);
    return { kind: "reply", text: `${label} You attached: ${files}.` };
  }
  const routineReply = routineRunReply(text);
  if (routineReply !== undefined) return { kind: "reply", text: routineReply };
  const task = helperTaskText(text);
  if (task !== undefined) return decide(task, request); // a helper reads its task's commands
  const trimmed = text.trim();
  const helperCalls = decideHelperCommand(trimmed, (tool) => isOffered(request, tool));
  if (helperCalls !== undefined) {
    const [first, ...more] = helperCalls;
    if (first !== undefined) return { kind: "tool", ...first, more };
  }
  const policy = decidePolicyCommand(
    trimmed,
    (tool) => isOffered(request, tool),
    (rest) => decide(rest, request),
  );
  if (policy !== undefined) return policy;
  // Any line of a routine run's message (its instruction or payload) may ask the triage to escalate.
  const escalate = /^escalate(?:\s+(.+))?$/im.exec(trimmed);
  if (escalate !== null && isOffered(request, "escalate"))
    return { kind: "tool", name: "escalate", input: { reason: escalate[1]?.trim() ?? "asked to" } };
  if (trimmed.startsWith("$ ")) {
    const command = trimmed.slice(2).trim();
    if (isOffered(request, "shell")) return { kind: "tool", name: "shell", input: { command } };
    return {
      kind: "reply",
      text: `${label} I can't run "${command}": this bot has no computer yet.`,
    };
  }
  const read = /^read\s+(\S+)\s*$/.exec(trimmed);
  if (read?.[1] !== undefined && isOffered(request, "read")) {
    return { kind: "tool", name: "read", input: { path: read[1] } };
  }
  const write = /^write\s+(\S+)(?:\s([\s\S]*))?$/.exec(trimmed);
  if (write?.[1] !== undefined && isOffered(request, "write")) {
    return { kind: "tool", name: "write", input: { path: write[1], content: write[2] ?? "" } };
  }
  const list = /^ls(?:\s+(\S+))?\s*$/.exec(trimmed);
  if (list !== null && isOffered(request, "list")) {
    return { kind: "tool", name: "list", input: { path: list[1] ?? "." } };
  }
  const editCommand = /^edit\s+(\S+)\s([\s\S]+?)\s=>\s([\s\S]*)$/.exec(trimmed);
  if (
    editCommand?.[1] !== undefined &&
    editCommand[2] !== undefined &&
    isOffered(request, "edit")
  ) {
    return {
      kind: "tool",
      name: "edit",
      input: { path: editCommand[1], oldString: editCommand[2], newString: editCommand[3] ?? "" },
    };
  }
  const glob = /^glob\s+(\S+)\s*$/.exec(trimmed);
  if (glob?.[1] !== undefined && isOffered(request, "glob")) {
    return { kind: "tool", name: "glob", input: { pattern: glob[1] } };
  }
  const background = /^bg\s+([\s\S]+)$/.exec(trimmed);
  if (background?.[1] !== undefined && isOffered(request, "shell")) {
    return { kind: "tool", name: "shell", input: { command: background[1], background: true } };
  }
  const job = /^job\s+(\S+)\s*$/.exec(trimmed);
  if (job?.[1] !== undefined && isOffered(request, "shell_status")) {
    return { kind: "tool", name: "shell_status", input: { jobId: job[1] } };
  }
  const remember = /^remember(?:\s+(user|profile|log|note):)?\s+([\s\S]+)$/i.exec(trimmed);
  if (remember?.[2] !== undefined && isOffered(request, "memory")) {
    return {
      kind: "tool",
      name: "memory",
      input: {
        action: "add",
        tier: remember[1]?.toLowerCase() ?? "profile",
        text: remember[2].trim(),
      },
    };
  }
  const forget = /^forget\s+(\S+)\s*$/i.exec(trimmed);
  if (forget?.[1] !== undefined && isOffered(request, "memory")) {
    return { kind: "tool", name: "memory", input: { action: "remove", id: forget[1] } };
  }
  const result =
    decideResultCommand(trimmed, (tool) => isOffered(request, tool)) ??
    decideSecretCommand(trimmed, (tool) => isOffered(request, tool));
  if (result !== undefined) return result;
  const web = decideWebCommand(trimmed, (tool) => isOffered(request, tool));
  if (web !== undefined) return web;
  const skill = /^skill\s+(\S+)\s*$/i.exec(trimmed);
  if (skill?.[1] !== undefined && isOffered(request, "skill")) {
    return { kind: "tool", name: "skill", input: { name: skill[1] } };
  }
  return { kind: "reply", text: echoReply(trimmed, request) };
}

/** A fence longer than any run of backticks in the content, so the quote cannot be broken out of. */
function fence(content: string): string {
  const longestRun = Math.max(0, ...(content.match(/`+/g) ?? []).map((run) => run.length));
  return "`".repeat(Math.max(3, longestRun + 1));
}

const exitStatusPatterns = [
  /\bexit(?:ed with)?[ _-]?(?:status|code)\b\s*[:=]?\s*(-?\d+)/i,
  /"exit_?code"\s*:\s*(-?\d+)/i,
];

function exitStatusOf(output: string): string | undefined {
  for (const pattern of exitStatusPatterns) {
    const match = pattern.exec(output);
    if (match?.[1] !== undefined) return match[1];
  }
  return undefined;
}

function quoteToolResult(message: Extract<ModelMessage, { role: "tool" }>): string {
  const output = message.output.replace(/\n$/, "");
  const marker = fence(output);
  const exitStatus = exitStatusOf(output);
  const heading = message.isError ? `\`${message.name}\` failed:` : `\`${message.name}\` returned:`;
  const status = exitStatus === undefined ? "" : `\n\nExit status: ${exitStatus}.`;
  const media = message.media ?? [];
  const images =
    media.length === 0
      ? ""
      : `\n\nIt also returned ${describeMedia(media)}; the demo model cannot look at images.`; // D3
  return `${heading}\n\n${marker}\n${output}\n${marker}${status}${images}`;
}

/** The tool results at the end of the conversation (one per call of the last assistant turn). */
function trailingToolResults(
  messages: readonly ModelMessage[],
): Array<Extract<ModelMessage, { role: "tool" }>> {
  const results: Array<Extract<ModelMessage, { role: "tool" }>> = [];
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (message?.role !== "tool") break;
    results.unshift(message);
  }
  return results;
}

function lastUserMessage(
  messages: readonly ModelMessage[],
): { index: number; text: string } | undefined {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (message?.role === "user") return { index, text: message.text };
  }
  return undefined;
}

/** Deterministic call id from the user message that asked for it (D1). */
function callIdFor(index: number, text: string): string {
  return `demo_${createHash("sha256").update(`${index}\u0000${text}`).digest("hex").slice(0, 16)}`;
}

function messageText(message: ModelMessage): string {
  switch (message.role) {
    case "user":
      return message.text;
    case "assistant":
      return `${message.text} ${message.toolCalls.map((call) => JSON.stringify(call.input)).join(" ")}`;
    case "tool":
      return message.output;
  }
}

function inputWords(request: InferRequest): number {
  return (
    countWords(request.system) +
    request.messages.reduce((total, message) => total + countWords(messageText(message)), 0)
  );
}

function replyWith(text: string, request: InferRequest): InferResult {
  for (const piece of splitIntoWordPieces(text)) emitTextDelta(request, piece);
  return {
    text,
    toolCalls: [],
    usage: { inputTokens: inputWords(request), outputTokens: countWords(text) },
    finishReason: "stop",
    model: "demo",
  };
}

/** Creates the offline demo model (`id: "demo"`, `isDemo: true`, `acceptsImages: false`). */
export function createDemoModel(): ModelClient {
  return {
    id: "demo",
    isDemo: true,
    acceptsImages: false, // D3
    async infer(request: InferRequest): Promise<InferResult> {
      request.signal?.throwIfAborted();
      const results = trailingToolResults(request.messages);
      if (results.length > 0) {
        return replyWith(`${label} ${results.map(quoteToolResult).join("\n\n")}`, request);
      }
      const userMessage = lastUserMessage(request.messages);
      if (userMessage === undefined)
        return replyWith(`${label} Say something and I will answer.`, request);
      const action = decide(userMessage.text, request);
      if (action.kind === "reply") return replyWith(action.text, request);
      const call: ToolCall = {
        id: callIdFor(userMessage.index, userMessage.text),
        name: action.name,
        input: action.input,
      };
      const more = (action.more ?? []).map((extra, index): ToolCall => ({
        id: callIdFor(userMessage.index, `${userMessage.text}\u0000${index + 1}`),
        name: extra.name,
        input: extra.input,
      }));
      return {
        text: action.text ?? "",
        toolCalls: [call, ...more],
        usage: {
          inputTokens: inputWords(request),
          outputTokens: countWords(JSON.stringify(action.input)),
        },
        finishReason: "tool-calls",
        model: "demo",
      };
    },
  };
}

/**
 * The browser, the desktop and the web tools, for the offline demo (docs/models.md):
 * `browse URL`, `snapshot`, `click REF`, `type REF TEXT`, `screenshot`, `desktop screenshot`,
 * `fetch URL`, `search QUERY`.
 */
function decideWebCommand(
  text: string,
  offered: (tool: string) => boolean,
): DemoAction | undefined {
  const browser = (input: Record<string, unknown>): DemoAction | undefined =>
    offered("browser") ? { kind: "tool", name: "browser", input } : undefined;
  const browse = /^browse\s+(\S+)\s*$/i.exec(text);
  if (browse?.[1] !== undefined) return browser({ action: "navigate", url: browse[1] });
  if (/^snapshot\s*$/i.test(text)) return browser({ action: "snapshot" });
  if (/^screenshot\s*$/i.test(text)) return browser({ action: "screenshot" });
  const click = /^click\s+(\S+)\s*$/i.exec(text);
  if (click?.[1] !== undefined) return browser({ action: "click", ref: click[1] });
  const type = /^type\s+(\S+)\s+([\s\S]+)$/i.exec(text);
  if (type?.[1] !== undefined && type[2] !== undefined)
    return browser({ action: "type", ref: type[1], text: type[2] });
  if (/^desktop screenshot\s*$/i.test(text) && offered("computer"))
    return { kind: "tool", name: "computer", input: { action: "screenshot" } };
  const fetch = /^fetch\s+(\S+)\s*$/i.exec(text);
  if (fetch?.[1] !== undefined && offered("web_fetch"))
    return { kind: "tool", name: "web_fetch", input: { url: fetch[1] } };
  const search = /^search\s+([\s\S]+)$/i.exec(text);
  if (search?.[1] !== undefined && offered("web_search"))
    return { kind: "tool", name: "web_search", input: { query: search[1].trim() } };
  return undefined;
}
