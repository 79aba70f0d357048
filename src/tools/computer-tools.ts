/**
 * Computer tools (ARCHITECTURE.md §5): run on the user's computer through the gateway.
 *
 * Invariants:
 *   CT1 on a sleeping computer only waking tools (shell, read, browser, computer) may wake it;
 *       any other computer tool answers exactly `asleepMessage`.
 *   CT2 the call id comes from the journal (ToolCallContext.callId), so an engine retry of the
 *       step sends the same id and the worker's done-log answers it instead of running it again.
 *   CT3 a turn that used the computer holds it (no idle sleep) until `endTurn` releases it.
 *   CT4 the control plane is reached through the engine's own journaled calls and sends (never a
 *       raw request from inside a step), so a replay neither wakes twice nor loses a release.
 *   CT5 an interrupted turn stops its running call: the gateway tells the worker to cancel it
 *       (the shell kills its process group) and the model is told the call was stopped.
 *   CT6 on a self-hosted computer whose worker is not connected, every computer tool answers
 *       exactly `notConnectedMessage`; nothing is woken (the control plane never starts a
 *       self-hosted machine, C7), and a call whose worker went away answers it too.
 *   CT7 `prepare` (the skills copy) runs before every call that reaches an awake computer, after
 *       the wake and before the tool; it journals its own work and must not throw.
 *   CT8 secrets reach the computer only as environment variables of shell processes, added inside
 *       the tool's step to what is sent (the journal keeps the model's input and the redacted
 *       result, never the variables); live output passes a stream redactor (TOOL3).
 *   CT9 a write or edit that carries `[REDACTED]` into a file that holds a secret value is refused
 *       with a message, before anything is written: the model only ever saw the mark, and writing
 *       it back would destroy the value (OpenClaw #130180).
 *   CT10 what a `write` replaced (`previous`) goes only into the step's details, for the owner's
 *        diff, never into the text the model reads (it did not ask to read the file); like every
 *        result it passes the redaction hook before it is journaled (TOOL3).
 */
import { z } from "zod";
import { isRoostError } from "../errors/index.ts";
import {
  computerObjectName,
  type ComputerStatus,
  type EnsureAwakeRequest,
} from "../computers/index.ts";
import type { EventHub } from "../events/index.ts";
import type { Gateway } from "../gateway/index.ts";
import type { ToolSpec } from "../models/index.ts";
import {
  browserModelInputSchema,
  isToolName,
  personOnScreenMessage,
  toolInputSchemas,
  type BrowserOutput,
  type DesktopOutput,
  type ShellOutput,
  type ShellStatusOutput,
  type ToolName,
  type ToolOutput,
} from "../protocol/index.ts";
import { CallFailedError, type DurableContext } from "../engine/index.ts";
import type { Store } from "../store/index.ts";
import { interruptedResult } from "./define.ts";
import type { ToolSource } from "./router.ts";
import { redactionAccountOf, secretsOwnersOf } from "./route.ts";
import type { ToolCallContext, ToolResult, ToolTurnContext } from "./types.ts";

/** CT1: the exact text a non-waking tool returns on a sleeping computer. */
export const asleepMessage =
  "The computer is asleep. Use Shell or Read to wake it, then try again.";

/** CT6: the exact text every computer tool returns while a self-hosted machine's worker is away. */
export const notConnectedMessage =
  "Your computer (a self-hosted machine) is not connected. Start `roost worker` on it, then try again.";

/** Tools that may wake a sleeping computer. @default shell, read, browser and computer */
export const defaultWakingTools: readonly ToolName[] = ["shell", "read", "browser", "computer"];

/** A shell command's time limit unless the model asks for another. */
export const defaultShellTimeoutMs = 120_000;
/** The longest a single foreground command may run; longer work belongs in the background. */
export const maxShellTimeoutMs = 10 * 60_000;
const fileToolTimeoutMs = 60_000;
/** A browser action (a page load, a wait of at most a minute) and the browser's cold start. */
const browserTimeoutMs = 150_000;

const descriptions: Record<ToolName, string> = {
  shell:
    "Run a bash command on your computer (working directory /workspace unless cwd is given). Returns the exit code and output; long output keeps its head and tail and names a file with the full text. For work longer than a few minutes set background: true and check it with shell_status. Wakes a sleeping computer.",
  shell_status:
    "Check a background job started by shell with background: true: its state, exit code and the tail of its output.",
  read: "Read a file on your computer: text with line numbers (use offset and limit for long files); images and binary files are detected. Wakes a sleeping computer.",
  write:
    "Create or replace a file on your computer with the given content (atomically; parent folders are created).",
  edit: "Replace an exact string in a file on your computer. Fails if the string is missing, or occurs more than once unless replaceAll is true.",
  list: "List a directory on your computer (default /workspace): names, types and sizes.",
  glob: "Find files on your computer by glob pattern, e.g. **/*.py, under a directory (default /workspace).",
  browser:
    "Use a real web browser (Chromium) on your computer; logins and cookies persist. navigate returns the page's accessibility snapshot: a tree whose elements carry refs like [ref=e12]; click, type, hover, select, extract and wait name one of those refs (take a new snapshot when the page changed). Actions return the new snapshot. screenshot returns an image. Downloads go to /workspace/downloads. For a login or CAPTCHA, ask the user to take over. Wakes a sleeping computer.",
  computer:
    "Control the desktop of your browser's screen with mouse and keyboard, for what the browser tool cannot do (dialogs, other windows): screenshot first to see it, then click or type at pixel coordinates. Prefer the browser tool for web pages.",
};

const shellModelInput = toolInputSchemas.shell.extend({
  timeoutSeconds: z
    .number()
    .int()
    .positive()
    .max(maxShellTimeoutMs / 1000)
    .optional()
    .describe("Time limit in seconds (default 120, at most 600); use background for longer work."),
});

function inputSchemaFor(name: ToolName): z.ZodType {
  if (name === "shell") return shellModelInput;
  if (name === "browser") return browserModelInputSchema; // `record` is the server's
  return toolInputSchemas[name];
}

export interface ComputerToolsOptions {
  /**
   * A `browser` or `computer` call was refused because a person holds the bot's screen: the
   * conversation is told when they hand it back (tools/handoff-tool.ts, HOF4). @default nothing
   */
  onPersonOnScreen?: (context: ToolCallContext, computerId: string) => Promise<void>;
  store: Store;
  gateway: Pick<Gateway, "call">;
  events?: EventHub;
  /** The provider new computers get (recorded with the computer). */
  providerKind: string;
  wakingTools?: readonly ToolName[];
  /**
   * CT7: runs before every call that reaches an awake computer (skills/ copies the skills onto
   * it here, once per turn). Journals through `context` and never throws. @default nothing
   */
  prepare?: (computerId: string, context: ToolCallContext) => Promise<void>;
  /** CT8, CT9: the bot's secrets (secrets/). @default none */
  secrets?: ComputerSecrets;
}

/** What computer tools need of the secrets module (CT8, CT9). */
export interface ComputerSecrets {
  /** The variables a bot's shell processes get. */
  envFor(
    accountId: string | null,
    botId: string | null,
    consentedIn?: string,
  ): Promise<Record<string, string>>;
  /** Replaces every complete secret value of the account in `text` (unchanged: none there). */
  redactorFor(accountId: string): Promise<{ empty: boolean; whole(text: string): string }>;
}

/** CT8, ROUTE2: the variables the turn's route lets its shell processes have. */
function envOf(secrets: ComputerSecrets, context: ToolTurnContext) {
  const { userAccountId, botId, consentedIn } = secretsOwnersOf(context);
  return secrets.envFor(userAccountId, botId, consentedIn);
}

/** CT9: what redaction writes, and so what the model may try to write back. */
export const redactedMarkText = "[REDACTED]";

/** CT9: the exact refusal of a write that would replace a secret value by its mark. */
export const redactedWriteMessage = (path: string) =>
  `Refused: ${path} holds a secret value that you see as ${redactedMarkText}, and this change would replace it with the mark. Leave the line with ${redactedMarkText} as it is: edit only the other lines (an edit whose oldString and newString do not include ${redactedMarkText}), or ask the owner to change the secret.`;

export function createComputerTools(options: ComputerToolsOptions): ToolSource {
  const waking = new Set<string>(options.wakingTools ?? defaultWakingTools);
  const specs: ToolSpec[] = (Object.keys(toolInputSchemas) as ToolName[]).map((name) => ({
    name,
    description: descriptions[name],
    inputSchema: z.toJSONSchema(inputSchemaFor(name), { io: "input" }),
  }));
  // Turns that used the computer, and its id (CT3), per attempt: an attempt the engine retries in
  // this process replays the journal from the start with a new context, and must take the same
  // path (the `computer` step again, from the journal) rather than the last attempt's memory.
  const usedByAttempt = new WeakMap<DurableContext, Map<string, string>>();
  const usedIn = (durable: DurableContext) => {
    let used = usedByAttempt.get(durable);
    if (used === undefined) {
      used = new Map();
      usedByAttempt.set(durable, used);
    }
    return used;
  };
  const computerTarget = (computerId: string, handler: string) => ({
    object: computerObjectName,
    key: computerId,
    handler,
  });

  /** CT9: refuses a write or edit that would put the mark where the file holds a value. */
  async function guardRedactedWrite(
    name: ToolName,
    input: Record<string, unknown>,
    computerId: string,
    context: ToolCallContext,
    signal: AbortSignal,
  ): Promise<ToolResult | undefined> {
    if (options.secrets === undefined || (name !== "write" && name !== "edit")) return undefined;
    const carried =
      name === "write"
        ? input.encoding !== "base64" && String(input.content).includes(redactedMarkText)
        : String(input.newString).includes(redactedMarkText) ||
          String(input.oldString).includes(redactedMarkText);
    if (!carried) return undefined;
    const redactor = await options.secrets.redactorFor(redactionAccountOf(context)); // ROUTE4
    if (redactor.empty) return undefined;
    const current = await options.gateway.call(
      computerId,
      {
        callId: `${context.callId}:guard`,
        tool: "read",
        input: { path: input.path, limit: Number.MAX_SAFE_INTEGER },
        timeoutMs: fileToolTimeoutMs,
      },
      { signal },
    );
    if (!current.ok) return undefined; // no such file (or unreadable): nothing to destroy
    const output = current.output as ToolOutput<"read">;
    if (output.kind !== "text" || redactor.whole(output.content) === output.content)
      return undefined;
    return {
      output: redactedWriteMessage(output.path),
      isError: true,
      details: { error: "redacted_write", path: output.path },
    };
  }

  return {
    name: "computer",
    specs: async () => specs,

    async execute(name: string, input: unknown, context: ToolCallContext): Promise<ToolResult> {
      if (!isToolName(name))
        return { output: `There is no tool named ${JSON.stringify(name)}.`, isError: true };
      const parsed = inputSchemaFor(name).safeParse(input);
      if (!parsed.success) {
        return {
          output: `Invalid input for ${name}: ${z.prettifyError(parsed.error)}`,
          isError: true,
        };
      }
      let toolInput = parsed.data as Record<string, unknown>;
      let timeoutMs =
        name === "browser" || name === "computer" ? browserTimeoutMs : fileToolTimeoutMs;
      if (name === "shell") {
        const { timeoutSeconds, ...rest } = toolInput as z.output<typeof shellModelInput>;
        toolInput = rest;
        timeoutMs = Math.min(
          maxShellTimeoutMs,
          (timeoutSeconds ?? defaultShellTimeoutMs / 1000) * 1000,
        );
      }

      const used = usedIn(context.durable);
      const computerId =
        used.get(context.turnId) ??
        (await context.run("computer", async () => {
          const computer = await options.store.ensureComputer(
            context.accountId,
            options.providerKind,
          );
          return computer.id;
        }));
      let status: ComputerStatus;
      try {
        status = await context.durable.call<ComputerStatus>(
          computerTarget(computerId, "ensureAwake"),
          {
            accountId: context.accountId,
            holder: context.turnId, // CT3
            allowWake: waking.has(name), // CT1
          } satisfies EnsureAwakeRequest,
        ); // CT4
      } catch (error) {
        // The control plane already retried the wake; tell the model now rather than retry here
        // (each attempt could wait for a worker for a whole wake timeout).
        if (error instanceof CallFailedError) {
          return {
            output: `The computer could not be woken: ${error.message}`,
            isError: true,
            details: { error: "computer_unavailable" },
          };
        }
        throw error;
      }
      used.set(context.turnId, computerId);
      const selfHosted = status.kind === "self-hosted";
      if (selfHosted && status.state !== "connected")
        return {
          output: notConnectedMessage,
          isError: true,
          details: { computerState: status.state },
        }; // CT6
      if (!selfHosted && status.state !== "awake")
        return { output: asleepMessage, isError: true, details: { computerState: status.state } };
      await options.prepare?.(computerId, context); // CT7

      return context.run(`tool:${name}`, async (signal) => {
        const started = Date.now();
        if (signal.aborted) return interruptedResult(name);
        try {
          const refused = await guardRedactedWrite(name, toolInput, computerId, context, signal);
          if (refused !== undefined) return refused; // CT9
          const sent =
            name === "browser"
              ? {
                  ...toolInput,
                  // The server's, never the model's: withBrowserRecording (attachments/) sets it
                  // from the bot's setting and removes any the model wrote.
                  record: (input as { record?: unknown }).record === true,
                }
              : name === "shell" && options.secrets !== undefined
                ? {
                    ...toolInput,
                    env: {
                      ...(await envOf(options.secrets, context)), // ROUTE2
                      ...(toolInput.env as Record<string, string> | undefined),
                    },
                  } // CT8
                : toolInput;
          const streams = new Map<string, ReturnType<ToolCallContext["redactStream"]>>();
          const publish = (stream: "stdout" | "stderr", data: string) => {
            if (data !== "")
              options.events?.publish({
                type: "tool-output",
                conversationId: context.conversationId,
                callId: context.callId,
                stream,
                data,
              });
          };
          const result = await options.gateway.call(
            computerId,
            { callId: context.callId, tool: name, input: sent, timeoutMs, botId: context.botId }, // CT2
            {
              signal, // CT5
              onChunk: (chunk) => {
                let redactor = streams.get(chunk.stream);
                if (redactor === undefined) {
                  redactor = context.redactStream(); // CT8, TOOL3
                  streams.set(chunk.stream, redactor);
                }
                publish(chunk.stream, redactor.push(chunk.data));
              },
            },
          );
          for (const [stream, redactor] of streams)
            publish(stream as "stdout" | "stderr", redactor.end());
          const durationMs = Date.now() - started;
          if (!result.ok) {
            if (
              (name === "browser" || name === "computer") &&
              result.error.code === "busy" &&
              result.error.message.startsWith(personOnScreenMessage)
            )
              await options.onPersonOnScreen?.(context, computerId); // HOF4
            return {
              output: `${name} failed (${result.error.code}): ${result.error.message}`,
              isError: true,
              details: { error: result.error },
              durationMs,
            };
          }
          return { ...formatOutput(name, result.output as ToolOutput<ToolName>), durationMs };
        } catch (error) {
          if (signal.aborted) return interruptedResult(name, Date.now() - started);
          // CT6: the machine's worker went away and did not come back within the gateway's wait.
          if (selfHosted && isRoostError(error) && error.code === "computer_unavailable")
            return {
              output: notConnectedMessage,
              isError: true,
              details: { error: "computer_unavailable" },
              durationMs: Date.now() - started,
            };
          throw error;
        }
      });
    },

    async endTurn(context) {
      const used = usedIn(context.durable);
      const computerId = used.get(context.turnId);
      if (computerId === undefined) return;
      used.delete(context.turnId);
      context.durable.send(computerTarget(computerId, "release"), { holder: context.turnId }); // CT3, CT4
    },
  };
}

function formatShell(output: ShellOutput): ToolResult {
  if (output.kind === "started") {
    return {
      output: `Started background job ${output.jobId} (pid ${output.pid}). Check it with shell_status {"jobId": "${output.jobId}"}. Output goes to ${output.stdoutPath} and ${output.stderrPath}.`,
      isError: false,
      details: { ...output },
    };
  }
  const lines = [
    output.timedOut
      ? `Timed out after ${(output.durationMs / 1000).toFixed(1)} s (the command was killed).`
      : `Exit code ${output.exitCode ?? "unknown"} (${(output.durationMs / 1000).toFixed(1)} s).`,
  ];
  if (output.note !== undefined) lines.push(`Note: ${output.note}`);
  if (output.stdout !== "") lines.push(`stdout:\n${output.stdout}`);
  if (output.stdoutTruncated)
    lines.push(
      `(stdout was ${output.stdoutBytes} bytes; the middle was cut. Full text: ${output.stdoutPath})`,
    );
  if (output.stderr !== "") lines.push(`stderr:\n${output.stderr}`);
  if (output.stderrTruncated)
    lines.push(
      `(stderr was ${output.stderrBytes} bytes; the middle was cut. Full text: ${output.stderrPath})`,
    );
  if (output.stdout === "" && output.stderr === "") lines.push("(no output)");
  return { output: lines.join("\n"), isError: output.exitCode !== 0, details: { ...output } };
}

function formatStatus(output: ShellStatusOutput): ToolResult {
  const lines = [
    `Job ${output.jobId} (${output.command}): ${output.state}${output.exitCode === null ? "" : `, exit code ${output.exitCode}`}.`,
  ];
  if (output.stdoutTail !== "") lines.push(`stdout (tail):\n${output.stdoutTail}`);
  if (output.stderrTail !== "") lines.push(`stderr (tail):\n${output.stderrTail}`);
  return { output: lines.join("\n"), isError: false, details: { ...output } };
}

function formatOutput(name: ToolName, output: ToolOutput<ToolName>): ToolResult {
  switch (name) {
    case "shell":
      return formatShell(output as ShellOutput);
    case "shell_status":
      return formatStatus(output as ShellStatusOutput);
    case "read": {
      const read = output as ToolOutput<"read">;
      if (read.kind === "image")
        return {
          output: `${read.path} is an image (${read.mimeType}, ${read.sizeBytes} bytes); it is attached for models that can see images.`,
          isError: false,
          media: [{ type: "image", mimeType: read.mimeType, data: read.data }],
          details: { path: read.path, mimeType: read.mimeType, sizeBytes: read.sizeBytes },
        };
      if (read.kind === "binary")
        return {
          output: `${read.path} is a binary file (${read.sizeBytes} bytes); it cannot be shown as text.`,
          isError: false,
          details: { ...read },
        };
      const range = `lines ${read.startLine}–${read.endLine}${read.totalLines === undefined ? "" : ` of ${read.totalLines}`}`;
      const more = read.truncated
        ? `\n(more follows: read again with offset ${read.endLine + 1})`
        : "";
      return {
        output: `${read.path} (${range}):\n${read.content}${more}`,
        isError: false,
        details: {
          path: read.path,
          startLine: read.startLine,
          endLine: read.endLine,
          truncated: read.truncated,
        },
      };
    }
    case "write": {
      const write = output as ToolOutput<"write">;
      return {
        output: `${write.created ? "Created" : "Replaced"} ${write.path} (${write.bytesWritten} bytes).`,
        isError: false,
        details: { ...write }, // CT10: `previous` only here
      };
    }
    case "edit": {
      const edit = output as ToolOutput<"edit">;
      return {
        output: `Edited ${edit.path} (${edit.replacements} replacement${edit.replacements === 1 ? "" : "s"}).`,
        isError: false,
        details: { ...edit },
      };
    }
    case "list": {
      const list = output as ToolOutput<"list">;
      const rows = list.entries.map(
        (entry) =>
          `${entry.type === "directory" ? `${entry.name}/` : entry.name}${entry.type === "file" ? ` (${entry.sizeBytes} bytes)` : ""}`,
      );
      return {
        output: `${list.path}:\n${rows.length === 0 ? "(empty)" : rows.join("\n")}${list.truncated ? "\n(more entries not shown)" : ""}`,
        isError: false,
        details: { path: list.path, count: list.entries.length },
      };
    }
    case "browser":
      return formatBrowser(output as BrowserOutput);
    case "computer": {
      const desktop = output as DesktopOutput;
      return {
        output:
          desktop.image === undefined
            ? desktop.text
            : `${desktop.text} It is attached for models that can see images.`,
        isError: false,
        ...(desktop.image === undefined
          ? {}
          : {
              media: [
                { type: "image", mimeType: desktop.image.mimeType, data: desktop.image.data },
              ],
            }),
        details: { action: desktop.action, width: desktop.width, height: desktop.height },
      };
    }
    case "glob": {
      const glob = output as ToolOutput<"glob">;
      return {
        output:
          glob.matches.length === 0
            ? `No files match under ${glob.path}.`
            : `${glob.matches.join("\n")}${glob.truncated ? "\n(more matches not shown)" : ""}`,
        isError: false,
        details: { path: glob.path, count: glob.matches.length },
      };
    }
  }
}

/** The browser's answer: the snapshot or text, an image for models that see them, downloads. */
function formatBrowser(output: BrowserOutput): ToolResult {
  const lines = [output.text];
  if (output.image !== undefined)
    lines.push(
      `(A ${output.image.width}x${output.image.height} screenshot of ${output.url} is attached for models that can see images.)`,
    );
  if (output.truncated)
    lines.push("(The text was cut in the middle; use extract on a ref for a part.)");
  if (output.downloads.length > 0)
    lines.push(
      `Downloads:\n${output.downloads.map((file) => `- ${file.path} (${file.size} bytes)`).join("\n")}`,
    );
  else if (output.action === "downloads") lines.push("(none)");
  return {
    output: lines.join("\n"),
    isError: false,
    ...(output.image === undefined
      ? {}
      : { media: [{ type: "image", mimeType: output.image.mimeType, data: output.image.data }] }),
    details: {
      action: output.action,
      url: output.url,
      title: output.title,
      truncated: output.truncated,
      downloads: output.downloads,
      ...(output.recording === undefined ? {} : { recording: output.recording }),
      ...(output.image === undefined
        ? {}
        : {
            screenshot: {
              mimeType: output.image.mimeType,
              width: output.image.width,
              height: output.image.height,
            },
          }),
    },
  };
}
