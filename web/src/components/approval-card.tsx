/**
 * A tool call waiting for the owner's approval (docs/approvals.md): the tool, what it would do,
 * why it asks (the policy's rule or the review model's verdict), the bot's stated reason, and
 * Approve / Deny while it waits. The conversation's next `approval` step settles the card; a 409
 * (answered elsewhere, or expired) reloads it.
 */
import { Check, ShieldAlert, X } from "lucide-react";
import { useCallback, useEffect, useState } from "react";
import { ApiError } from "../api/client.ts";
import type { Approval, ApprovalPayload, ApprovalState } from "../api/types.ts";
import { useSession } from "../state/session.tsx";

const stateLabel: Record<ApprovalState, string> = {
  pending: "Waiting for your approval",
  approved: "Approved",
  denied: "Denied",
  expired: "Denied: no answer in time",
};

/** What the call would do, in one line: the command, the path or URL, or the input as JSON. */
export function describeCall(input: unknown): string {
  const fields = (input ?? {}) as Record<string, unknown>;
  const field = fields.command ?? fields.path ?? fields.url;
  return typeof field === "string" ? field : JSON.stringify(input);
}

/** A starting pattern for "remember": the call's command or path, as the rules match it. */
function patternFor(input: unknown): string {
  const fields = (input ?? {}) as Record<string, unknown>;
  const field = fields.command ?? fields.path;
  return typeof field === "string" ? field.slice(0, 500) : "";
}

export function ApprovalCard({ payload }: { payload: ApprovalPayload }) {
  const { api } = useSession();
  const [approval, setApproval] = useState<Approval>();
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);
  // "Remember": also add a rule for calls matching this pattern (docs/approvals.md "Patterns").
  const [remember, setRemember] = useState(false);
  const [pattern, setPattern] = useState(() => patternFor(payload.input));
  const id = payload.approvalId;

  const load = useCallback(
    (signal?: AbortSignal) =>
      api
        .getApproval(id, signal)
        .then((value) => setApproval(value))
        .catch((error: unknown) => {
          if (signal?.aborted !== true)
            setProblem(error instanceof Error ? error.message : String(error));
        }),
    [api, id],
  );
  // The step's state changes when the settled step arrives: read the approval again then.
  useEffect(() => {
    const controller = new AbortController();
    void load(controller.signal);
    return () => controller.abort();
  }, [load, payload.state]);

  const decide = async (decision: "approve" | "deny") => {
    setBusy(true);
    setProblem(undefined);
    try {
      const trimmed = pattern.trim();
      setApproval(
        await api.decideApproval(
          id,
          remember && trimmed !== "" ? { decision, remember: trimmed } : { decision },
        ),
      );
    } catch (error) {
      setProblem(error instanceof Error ? error.message : String(error));
      if (error instanceof ApiError && error.status === 409) void load();
    } finally {
      setBusy(false);
    }
  };

  const state = approval?.state ?? payload.state;
  const review = approval?.review ?? payload.review;
  return (
    <article
      className={`approval-card approval-${state}`}
      data-step="approval"
      aria-label={`Approval for ${payload.tool}`}
    >
      <header className="approval-head">
        <ShieldAlert size={16} aria-hidden="true" />
        <span className="approval-tool">{payload.tool}</span>
        <span className="approval-status" role="status">
          {stateLabel[state]}
        </span>
      </header>
      <pre tabIndex={0} className="approval-call">
        {describeCall(payload.input)}
      </pre>
      <p className="approval-reason">{payload.reason}</p>
      {approval?.remembered != null && (
        <p className="approval-reason muted">
          Remembered for calls matching “{approval.remembered}”.
        </p>
      )}
      {approval?.botReason != null && (
        <p className="approval-bot-reason">
          <strong>The bot says:</strong> {approval.botReason}
        </p>
      )}
      {review !== null && (
        <p className="approval-review">
          <strong>Review ({review.model}):</strong> {review.decision}: {review.reason}
        </p>
      )}
      {problem !== undefined && (
        <p className="notice notice-error" role="alert">
          {problem}
        </p>
      )}
      {state === "pending" && (
        <label className="approval-remember">
          <input
            type="checkbox"
            checked={remember}
            onChange={(event) => setRemember(event.target.checked)}
          />{" "}
          Remember my answer for {payload.tool} calls matching{" "}
          <input
            type="text"
            className="approval-pattern"
            aria-label="Pattern to remember"
            value={pattern}
            maxLength={500}
            onChange={(event) => setPattern(event.target.value)}
          />
        </label>
      )}
      {state === "pending" && (
        <div className="approval-actions">
          <button
            type="button"
            className="button button-primary button-small"
            disabled={busy}
            onClick={() => void decide("approve")}
          >
            <Check size={14} aria-hidden="true" /> Approve
          </button>
          <button
            type="button"
            className="button button-small"
            disabled={busy}
            onClick={() => void decide("deny")}
          >
            <X size={14} aria-hidden="true" /> Deny
          </button>
          <span className="muted approval-expires">
            Denied at {new Date(payload.expiresAt).toLocaleTimeString()} unless answered
          </span>
        </div>
      )}
    </article>
  );
}
