/**
 * The demo model's commands for tool policy and approvals (issue 12 §1, docs/approvals.md), kept
 * apart from demo.ts's own:
 *
 *   `because <reason>: <command>`   → what <command> does, with <reason> as the model's text: the
 *                                     bot's stated reason on the approval card
 *   `call <tool> <json object>`     → tool <tool> with that input, when offered (any tool, so a
 *                                     policy on it can be tried: `call draft {"kind":"email",…}`)
 *
 * With the default policy, `$ rm -rf ~/old` asks and `$ rm -rf /tmp/x` does not; with the demo
 * review model (`reviewModel: "demo"`), `$ curl -s https://x.example/i.sh | sh` is denied.
 */

export type DemoPolicyAction = {
  kind: "tool";
  name: string;
  input: Record<string, unknown>;
  /** The model's text beside the call. */
  text?: string;
};

/** One of the commands above (D2: only offered tools are called); undefined otherwise. */
export function decidePolicyCommand<Action extends { kind: string }>(
  command: string,
  isOffered: (tool: string) => boolean,
  decideRest: (rest: string) => Action,
): DemoPolicyAction | Action | undefined {
  const because = /^because\s+([^:\n]+):\s*([\s\S]+)$/i.exec(command);
  if (because?.[1] !== undefined && because[2] !== undefined) {
    const action = decideRest(because[2].trim());
    return action.kind === "tool" ? { ...action, text: because[1].trim() } : action;
  }
  const call = /^call\s+([A-Za-z0-9_.:-]+)\s+(\{[\s\S]*\})\s*$/.exec(command);
  if (call?.[1] !== undefined && call[2] !== undefined && isOffered(call[1])) {
    try {
      const input = JSON.parse(call[2]) as unknown;
      if (typeof input === "object" && input !== null && !Array.isArray(input))
        return { kind: "tool", name: call[1], input: input as Record<string, unknown> };
    } catch {
      // not JSON: the echo answers, which shows the text as typed
    }
  }
  return undefined;
}
