/** The CLI's approval lines: what `roost chat` prints for an approval step, and a call in one line. */
import { describe, expect, it } from "vitest";
import { describeCall } from "./approvals.ts";
import { describeApprovalStep } from "./chat.ts";

describe("approval lines", () => {
  it("a waiting call says why and how to answer; a settled one says how it ended", () => {
    const payload = {
      approvalId: "apr_1",
      callId: "c",
      tool: "shell",
      input: { command: "rm -rf ~/old" },
      reason: 'the default policy asks before shell "rm -*r*"',
      review: null,
      state: "pending" as const,
      expiresAt: "2026-12-01T12:10:00.000Z",
    };
    expect(describeApprovalStep(payload)).toBe(
      '⏸ shell needs approval: the default policy asks before shell "rm -*r*". Answer with `roost approvals approve apr_1` or `roost approvals deny apr_1`.',
    );
    expect(describeApprovalStep({ ...payload, state: "approved" })).toBe("✓ shell: approved");
    expect(describeApprovalStep({ ...payload, state: "expired" })).toBe("✗ shell: expired");
  });

  it("a call is its command, path or URL, else its input as JSON, cut at 80 characters", () => {
    expect(describeCall({ tool: "shell", input: { command: "ls -la" } })).toBe("ls -la");
    expect(describeCall({ tool: "write", input: { path: "/etc/hosts", content: "x" } })).toBe(
      "/etc/hosts",
    );
    expect(describeCall({ tool: "draft", input: { to: "a" } })).toBe('{"to":"a"}');
    expect(describeCall({ tool: "shell", input: { command: "x".repeat(100) } })).toHaveLength(80);
  });
});
