import { describe, expect, it } from "vitest";
import { activeSteps, messageVersions, visibleSteps, type BranchStep } from "./branches.ts";

const message = (seq: number, replaces?: number): BranchStep => ({
  seq,
  kind: "message",
  payload: {
    text: `m${seq}`,
    ...(replaces === undefined ? {} : { replaces: { seq: replaces, reason: "edit" } }),
  },
});
const reply = (seq: number): BranchStep => ({ seq, kind: "reply", payload: { text: `r${seq}` } });
const seqs = (steps: readonly BranchStep[]) => steps.map((step) => step.seq);

describe("branches (BR1–BR3)", () => {
  // 1 m, 2 r, 3 m, 4 r | 5 m replaces 3, 6 r | 7 m replaces 5, 8 r | 9 m replaces 1, 10 r
  const record = [
    message(1),
    reply(2),
    message(3),
    reply(4),
    message(5, 3),
    reply(6),
    message(7, 5),
    reply(8),
  ];

  it("a replacing message drops the steps from the one it replaces up to itself (BR1)", () => {
    expect(seqs(activeSteps(record))).toEqual([1, 2, 7, 8]);
    expect(seqs(activeSteps([...record, message(9, 1), reply(10)]))).toEqual([9, 10]);
    expect(seqs(activeSteps([message(1), reply(2)]))).toEqual([1, 2]);
  });

  it("lists every version of a message, oldest first, for each of them (BR3)", () => {
    const versions = messageVersions(record);
    expect(versions.get(3)).toEqual([3, 5, 7]);
    expect(versions.get(7)).toEqual([3, 5, 7]);
    expect(versions.has(1)).toBe(false); // one version only: no switcher
  });

  it("an earlier version shows the conversation as it was then (BR2)", () => {
    expect(seqs(visibleSteps(record, []))).toEqual([1, 2, 7, 8]);
    expect(seqs(visibleSteps(record, [3]))).toEqual([1, 2, 3, 4]);
    expect(seqs(visibleSteps(record, [5]))).toEqual([1, 2, 5, 6]);
    expect(seqs(visibleSteps(record, [7]))).toEqual([1, 2, 7, 8]);
  });
});
