/**
 * The state behind the chat actions of one open conversation (components/message-actions.tsx):
 * which versions of edited messages the reader looks at, which message is being edited, and
 * the steps to show (protocol/branches.ts BR1–BR3).
 */
import { useCallback, useEffect, useMemo, useState } from "react";
import { activeSteps, messageVersions, visibleSteps } from "../../../src/protocol/branches.ts";
import type { Step } from "../api/types.ts";
import type { ChatActions } from "../components/message-actions.tsx";
import type { ConversationFeed, FeedSnapshot } from "./feed.ts";

export function useChatActionState(
  feed: ConversationFeed,
  snapshot: FeedSnapshot,
  options: { meId: string; idle: boolean; mayBranch: boolean },
): { actions: ChatActions; shown: FeedSnapshot; lastEditable: string | undefined } {
  const [chosen, setChosen] = useState<readonly number[]>([]);
  const [editingMessageId, setEditing] = useState<string>();
  const steps = snapshot.steps;
  useEffect(() => {
    setChosen([]);
    setEditing(undefined);
  }, [feed]);
  // A new version arriving (ours or another tab's) shows the newest branch.
  const newest = steps.at(-1)?.seq;
  useEffect(() => setChosen([]), [newest]);

  const versions = useMemo(() => messageVersions(steps), [steps]);
  const active = useMemo(() => activeSteps(steps), [steps]);
  const editable = useMemo(
    () =>
      new Set(
        active.flatMap((step: Step) =>
          step.kind === "message" &&
          step.payload.authorAccountId === options.meId &&
          (step.payload.source === undefined || step.payload.source.kind === "chat")
            ? [step.payload.messageId]
            : [],
        ),
      ),
    [active, options.meId],
  );
  const lastEditable = useMemo(
    () =>
      active.findLast(
        (step): step is Extract<Step, { kind: "message" }> =>
          step.kind === "message" && editable.has(step.payload.messageId),
      )?.payload.messageId,
    [active, editable],
  );
  // BR1, BR2: the active branch, or the record as it was before the next chosen version.
  const visible = useMemo(() => visibleSteps(steps, chosen), [steps, chosen]);
  const shown = useMemo(() => ({ ...snapshot, steps: visible }), [snapshot, visible]);

  const choose = useCallback(
    (seq: number) => {
      const list = versions.get(seq);
      if (list === undefined) return;
      setChosen((current) => {
        const others = current.filter((candidate) => !list.includes(candidate));
        return seq === list.at(-1) ? others : [...others, seq];
      });
    },
    [versions],
  );
  const actions = useMemo<ChatActions>(
    () => ({
      versions,
      choose,
      canAct: options.idle && options.mayBranch && chosen.length === 0,
      editingMessageId,
      startEdit: (messageId) => setEditing(messageId),
      stopEdit: () => setEditing(undefined),
      edit: (messageId, text) => feed.edit(messageId, text),
      regenerate: () => feed.regenerate(),
      editable,
    }),
    [versions, chosen, choose, options.idle, options.mayBranch, editingMessageId, feed, editable],
  );
  return { actions, shown, lastEditable };
}
