/**
 * Branches of a conversation (docs/chat.md "Branches", decision 0036): regenerating a reply or
 * editing a message never rewrites the record. The new message's step says which earlier message
 * it replaces (`MessagePayload.replaces`); the steps from that one up to the new one leave the
 * active branch but stay stored. Shared by the loop (the model's history) and the web app (the
 * timeline and its "‹ 1/2 ›" switcher), so both read a record the same way.
 *
 * Invariants:
 *   BR1 the active branch of a record is the steps left after, in seq order, every replacing
 *       message drops the steps from the seq it replaces up to itself; nothing else is dropped.
 *   BR2 the record as it stood before step `n` is the active branch of the steps below `n`: an
 *       earlier version of a message shows the conversation as it was then.
 *   BR3 the versions of a message are it and every message that replaced it (or a replacement
 *       of it), oldest first; the newest is the one in the active branch.
 */
import type { MessageReplaces } from "./api.ts";

/** What the branch rules read of a step. */
export interface BranchStep {
  seq: number;
  kind: string;
  payload: unknown;
}

/** The step's `replaces`, when it is a message that starts a branch. */
export function replacesOf(step: BranchStep): MessageReplaces | undefined {
  if (step.kind !== "message") return undefined;
  const replaces = (step.payload as { replaces?: MessageReplaces } | null)?.replaces;
  return replaces !== undefined && Number.isInteger(replaces.seq) ? replaces : undefined;
}

/** BR1: the active branch, in seq order. */
export function activeSteps<Step extends BranchStep>(steps: readonly Step[]): Step[] {
  const kept: Step[] = [];
  for (const step of [...steps].sort((a, b) => a.seq - b.seq)) {
    const replaces = replacesOf(step);
    if (replaces !== undefined)
      while (kept.length > 0 && kept[kept.length - 1]!.seq >= replaces.seq) kept.pop();
    kept.push(step);
  }
  return kept;
}

/** BR3: for each message seq with more than one version, its versions' seqs, oldest first. */
export function messageVersions(steps: readonly BranchStep[]): Map<number, number[]> {
  const rootOf = new Map<number, number>();
  const versions = new Map<number, number[]>();
  for (const step of [...steps].sort((a, b) => a.seq - b.seq)) {
    if (step.kind !== "message") continue;
    const replaces = replacesOf(step);
    const root = replaces === undefined ? step.seq : (rootOf.get(replaces.seq) ?? replaces.seq);
    rootOf.set(step.seq, root);
    const list = versions.get(root) ?? [];
    list.push(step.seq);
    versions.set(root, list);
  }
  const shared = new Map<number, number[]>();
  for (const [seq, root] of rootOf) {
    const list = versions.get(root)!;
    if (list.length > 1) shared.set(seq, list);
  }
  return shared;
}

/**
 * What to show when the reader picked earlier versions (`chosen`: a version's seq for the
 * messages whose versions they switched): BR2 with the smallest next-version seq as the cut.
 */
export function visibleSteps<Step extends BranchStep>(
  steps: readonly Step[],
  chosen: readonly number[],
): Step[] {
  const versions = messageVersions(steps);
  let cut = Number.POSITIVE_INFINITY;
  for (const seq of chosen) {
    const list = versions.get(seq);
    const next = list?.[list.indexOf(seq) + 1];
    if (next !== undefined) cut = Math.min(cut, next);
  }
  return activeSteps(cut === Number.POSITIVE_INFINITY ? steps : steps.filter((s) => s.seq < cut));
}
