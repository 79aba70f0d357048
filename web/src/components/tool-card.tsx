/**
 * One tool call as a compact card: tool, arguments, status and duration; opens to the full
 * arguments, the output, the exit code and any truncation.
 */
import {
  ChevronRight,
  CircleAlert,
  CircleCheck,
  CircleDashed,
  FileText,
  FolderTree,
  LoaderCircle,
  PenLine,
  ShieldAlert,
  SquareTerminal,
  Square,
  Wrench,
} from "lucide-react";
import { lazy, memo, Suspense, useEffect, useId, useState } from "react";
import type { ToolCall, ToolPayload } from "../api/types.ts";
import { formatBytes, formatDuration, summarizeInput } from "../lib/format.ts";
import { LiveView } from "./live-view.tsx";

/** What an edit or write changed (diff-view.tsx), loaded with the first card opened. */
const ToolDiff = lazy(() => import("./diff-view.tsx"));

export type ToolStatus = "running" | "approval" | "done" | "failed" | "stopped" | "interrupted";

const icons: Record<string, typeof Wrench> = {
  shell: SquareTerminal,
  shell_status: SquareTerminal,
  read: FileText,
  write: PenLine,
  edit: PenLine,
  list: FolderTree,
  glob: FolderTree,
};

export function toolStatus(
  result: ToolPayload | undefined,
  working: boolean,
  stopped = false,
  awaitingApproval = false,
): ToolStatus {
  if (result === undefined) {
    if (stopped) return "stopped";
    if (awaitingApproval) return "approval";
    return working ? "running" : "interrupted";
  }
  // The server records a stopped call with a result saying so (the model needs one per call).
  if (result.details.interrupted === true) return "stopped";
  const exitCode = result.details.exitCode;
  if (result.isError || (typeof exitCode === "number" && exitCode !== 0)) return "failed";
  return "done";
}

const statusLabel: Record<ToolStatus, string> = {
  running: "Running",
  approval: "Waiting for approval",
  done: "Done",
  failed: "Failed",
  stopped: "Stopped",
  interrupted: "No result",
};

function Elapsed({ since }: { since: number }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 500);
    return () => clearInterval(timer);
  }, []);
  return <>{formatDuration(Math.max(0, now - since))}</>;
}

function StatusIcon({ status }: { status: ToolStatus }) {
  switch (status) {
    case "running":
      return <LoaderCircle size={16} className="spin" aria-hidden="true" />;
    case "approval":
      return <ShieldAlert size={16} aria-hidden="true" />;
    case "done":
      return <CircleCheck size={16} aria-hidden="true" />;
    case "failed":
      return <CircleAlert size={16} aria-hidden="true" />;
    case "stopped":
      return <Square size={14} aria-hidden="true" />;
    case "interrupted":
      return <CircleDashed size={16} aria-hidden="true" />;
  }
}

/** Details worth a line of their own; the rest are listed as they come. */
function detailLines(
  details: Record<string, unknown>,
): { label: string; value: string; warn?: boolean }[] {
  const lines: { label: string; value: string; warn?: boolean }[] = [];
  const seen = new Set<string>();
  const take = (key: string) => {
    seen.add(key);
    return details[key];
  };
  const exitCode = take("exitCode");
  if (exitCode !== undefined)
    lines.push({
      label: "Exit code",
      value: exitCode === null ? "none (killed)" : JSON.stringify(exitCode),
      warn: exitCode !== 0,
    });
  if (take("timedOut") === true) lines.push({ label: "Timed out", value: "yes", warn: true });
  for (const stream of ["stdout", "stderr"] as const) {
    const truncated = take(`${stream}Truncated`);
    const bytes = take(`${stream}Bytes`);
    const path = take(`${stream}Path`);
    if (truncated === true) {
      const size = typeof bytes === "number" ? ` of ${formatBytes(bytes)}` : "";
      const where = typeof path === "string" ? `; the full text is in ${path}` : "";
      lines.push({
        label: `${stream} truncated`,
        value: `showing the start and end${size}${where}`,
        warn: true,
      });
    }
  }
  const truncated = take("truncated");
  if (truncated === true)
    lines.push({ label: "Truncated", value: "the output was shortened", warn: true });
  const error = take("error");
  if (error !== null && typeof error === "object") {
    const { code, message } = error as { code?: unknown; message?: unknown };
    lines.push({
      label: "Error",
      value: [code, message].filter((part) => typeof part === "string").join(": "),
      warn: true,
    });
  }
  // Shown elsewhere in the card, or too bulky for a line.
  for (const key of [
    "kind",
    "durationMs",
    "stdout",
    "stderr",
    "stdoutTail",
    "stderrTail",
    "content",
    "entries",
    "matches",
    "command",
    "input",
    "attachments", // shown under the card (attachments.tsx)
    "previous", // a write's replaced text: shown as its diff (diff-view.tsx)
  ]) {
    seen.add(key);
  }
  for (const [key, value] of Object.entries(details)) {
    if (seen.has(key) || value === undefined || value === null || value === false || value === "")
      continue;
    lines.push({ label: key, value: typeof value === "string" ? value : JSON.stringify(value) });
  }
  return lines;
}

function Arguments({ name, input }: { name: string; input: unknown }) {
  const record = (input ?? {}) as Record<string, unknown>;
  if ((name === "shell" || name === "bash") && typeof record.command === "string") {
    const { command, ...rest } = record;
    return (
      <>
        <pre tabIndex={0} className="tool-pre tool-command">
          <span className="prompt" aria-hidden="true">
            ${" "}
          </span>
          {command}
        </pre>
        {Object.keys(rest).length > 0 && (
          <pre tabIndex={0} className="tool-pre">
            {JSON.stringify(rest, null, 2)}
          </pre>
        )}
      </>
    );
  }
  return (
    <pre tabIndex={0} className="tool-pre">
      {JSON.stringify(input, null, 2)}
    </pre>
  );
}

function Output({ result }: { result: ToolPayload }) {
  const { details } = result;
  if (
    details.kind === "completed" &&
    typeof details.stdout === "string" &&
    typeof details.stderr === "string"
  ) {
    const { stdout, stderr } = details;
    if (stdout === "" && stderr === "") return <p className="muted tool-section">No output.</p>;
    return (
      <>
        {stdout !== "" && (
          <div className="tool-section">
            <h4>Output</h4>
            <pre tabIndex={0} className="tool-pre tool-output">
              {stdout}
            </pre>
          </div>
        )}
        {stderr !== "" && (
          <div className="tool-section">
            <h4>Errors (stderr)</h4>
            <pre tabIndex={0} className="tool-pre tool-output tool-stderr">
              {stderr}
            </pre>
          </div>
        )}
      </>
    );
  }
  return (
    <div className="tool-section">
      <h4>{result.isError ? "Error" : "Output"}</h4>
      {result.output === "" ? (
        <p className="muted">No output.</p>
      ) : (
        <pre tabIndex={0} className="tool-pre tool-output">
          {result.output}
        </pre>
      )}
    </div>
  );
}

/** The last lines of a running call's output, under its head. */
function LiveTail({ text }: { text: string }) {
  const lines = text.replace(/\n$/, "").split("\n").slice(-6).join("\n");
  return (
    <pre tabIndex={0} className="tool-live" aria-live="off">
      {lines}
    </pre>
  );
}

export const ToolCard = memo(function ToolCard({
  call,
  result,
  working,
  startedAt,
  liveOutput,
  stopped = false,
  awaitingApproval = false,
  botId,
}: {
  call: ToolCall;
  result: ToolPayload | undefined;
  /** The bot is still working (a missing result is "running", not "no result"). */
  working: boolean;
  startedAt: string;
  /** What the running call has printed so far. */
  liveOutput?: string | undefined;
  /** The owner stopped the turn while this call ran (an `interrupted` step names it). */
  stopped?: boolean;
  /** The call waits for the owner's approval (its card follows; docs/approvals.md). */
  awaitingApproval?: boolean;
  /** The bot whose screen a running browser or computer step shows as a live tile. */
  botId?: string | undefined;
}) {
  const [open, setOpen] = useState(false);
  const bodyId = useId();
  const status = toolStatus(result, working, stopped, awaitingApproval);
  const Icon = icons[call.name] ?? Wrench;
  const summary = summarizeInput(call.input);
  const lines = result === undefined ? [] : detailLines(result.details);
  const exitCode = result?.details.exitCode;

  return (
    <div className={`tool-card tool-${status}`} data-status={status} data-tool={call.name}>
      <button
        type="button"
        className="tool-head"
        aria-expanded={open}
        aria-controls={bodyId}
        onClick={() => setOpen((value) => !value)}
      >
        <ChevronRight size={16} className="tool-chevron" aria-hidden="true" />
        <Icon size={16} className="tool-icon" aria-hidden="true" />
        <span className="tool-name">{call.name}</span>
        <span className="tool-summary">{summary}</span>
        <span className="tool-status" title={statusLabel[status]}>
          <StatusIcon status={status} />
          <span className="tool-status-text">
            {status === "failed" && typeof exitCode === "number"
              ? `Exit ${exitCode}`
              : statusLabel[status]}
          </span>
        </span>
        <span className="tool-duration">
          {result !== undefined ? (
            formatDuration(result.durationMs)
          ) : status === "running" ? (
            <Elapsed since={Date.parse(startedAt)} />
          ) : (
            ""
          )}
        </span>
      </button>
      {!open && status === "running" && liveOutput !== undefined && liveOutput !== "" && (
        <LiveTail text={liveOutput} />
      )}
      {status === "running" &&
        botId !== undefined &&
        (call.name === "browser" || call.name === "computer") && <LiveView botId={botId} compact />}
      {open && (
        <div className="tool-body" id={bodyId}>
          <div className="tool-section">
            <h4>Arguments</h4>
            <Arguments name={call.name} input={call.input} />
          </div>
          {result === undefined ? (
            <>
              {status === "stopped" && (
                <p className="muted tool-section">
                  Stopped by you before it finished; what it was running on the computer was killed.
                </p>
              )}
              {(status === "running" || status === "stopped") &&
              liveOutput !== undefined &&
              liveOutput !== "" ? (
                <div className="tool-section">
                  <h4>{status === "running" ? "Output so far" : "Output before it was stopped"}</h4>
                  <pre tabIndex={0} className="tool-pre tool-output">
                    {liveOutput}
                  </pre>
                </div>
              ) : (
                status !== "stopped" && (
                  <p className="muted tool-section">
                    {status === "running"
                      ? "Running on the computer…"
                      : "This call has no result: the turn ended before it finished."}
                  </p>
                )
              )}
            </>
          ) : (
            <>
              {(call.name === "edit" || call.name === "write") && !result.isError && (
                <Suspense fallback={null}>
                  <ToolDiff call={call} result={result} />
                </Suspense>
              )}
              <Output result={result} />
              {lines.length > 0 && (
                <dl className="tool-details">
                  {lines.map((line) => (
                    <div key={line.label} className={line.warn === true ? "warn" : undefined}>
                      <dt>{line.label}</dt>
                      <dd>{line.value}</dd>
                    </div>
                  ))}
                </dl>
              )}
            </>
          )}
        </div>
      )}
    </div>
  );
});
