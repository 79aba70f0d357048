/**
 * A spare worker (docs/computers.md, "Spare sandboxes"; decision 0021, eighth pass): the local
 * provider starts one before any computer needs it, as uid 0 holding nothing but CAP_SETUID and
 * CAP_SETGID (ambient), with an empty bounding set and no_new_privs. It loads its modules, says
 * so on stdout, then blocks on its claim: one JSON object the host writes to a FIFO that only
 * uid 0 can open. The claim names the computer's uid, gid and environment; the worker drops its
 * supplementary groups, switches gid then uid (glibc applies each to every thread; with uid 0
 * gone, so are the capabilities) and takes the claim's environment as its own.
 *
 * Invariants:
 *   SC1 the claim is read once, whole (the host writes it in one write of less than a pipe's
 *       buffer and closes); anything but {uid, gid, env} with a uid and gid from 1 to 2^31-1 and
 *       string values is refused, and the worker exits 2 without running anything.
 *   SC2 the worker goes on only when every one of its threads has the claim's real, effective,
 *       saved and file-system uid and gid, no supplementary group and no capability, and
 *       setuid(0) is refused; otherwise it exits 2. It never runs a tool as uid 0.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Where a spare worker finds its claim FIFO (set only in a spare sandbox's environment). */
export const spareClaimVariable = "ROOST_SPARE_CLAIM";
/** The spare worker's line on stdout once its modules are loaded and it waits for its claim. */
export const spareReadyLine = "roost-spare-worker-ready";

export interface SpareClaim {
  uid: number;
  gid: number;
  env: Record<string, string>;
}

export class SpareClaimError extends Error {
  override readonly name = "SpareClaimError";
}

const isId = (value: unknown): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= 1 && value < 2 ** 31;

/** SC1: the claim's text, checked. */
export function parseSpareClaim(text: string): SpareClaim {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new SpareClaimError(
      text.length === 0
        ? "spare worker: the claim was empty (the host gave this spare up)"
        : "spare worker: the claim is not JSON",
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new SpareClaimError("spare worker: the claim is not an object");
  const { uid, gid, env, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0)
    throw new SpareClaimError(
      `spare worker: the claim has unknown fields: ${Object.keys(rest).join(", ")}`,
    );
  if (!isId(uid) || !isId(gid))
    throw new SpareClaimError("spare worker: the claim's uid and gid must be from 1 to 2^31-1");
  if (typeof env !== "object" || env === null || Array.isArray(env))
    throw new SpareClaimError("spare worker: the claim's env must be an object");
  for (const [name, text] of Object.entries(env))
    if (typeof text !== "string" || name === "" || name.includes("=") || name.includes("\0"))
      throw new SpareClaimError(`spare worker: the claim's env has a bad entry ${name}`);
  return { uid, gid, env: { ...(env as Record<string, string>) } };
}

/** The four ids of a `Uid:` or `Gid:` line of /proc/…/status, and a capability set. */
function statusField(status: string, field: string): string | undefined {
  const line = status.split("\n").find((candidate) => candidate.startsWith(`${field}:`));
  return line?.slice(field.length + 1).trim();
}

/** SC2: every thread of this process is the claim's uid and gid, with nothing left of root. */
export function checkSwitched(claim: Pick<SpareClaim, "uid" | "gid">): void {
  const problems: string[] = [];
  const tasks = readdirSync("/proc/self/task");
  for (const task of tasks) {
    const status = readFileSync(`/proc/self/task/${task}/status`, "utf8");
    const uids = statusField(status, "Uid")?.split(/\s+/).map(Number);
    const gids = statusField(status, "Gid")?.split(/\s+/).map(Number);
    if (uids?.length !== 4 || uids.some((id) => id !== claim.uid))
      problems.push(`thread ${task} has uids ${uids?.join(" ")}`);
    if (gids?.length !== 4 || gids.some((id) => id !== claim.gid))
      problems.push(`thread ${task} has gids ${gids?.join(" ")}`);
    if ((statusField(status, "Groups") ?? "") !== "")
      problems.push(`thread ${task} has groups ${statusField(status, "Groups")}`);
    for (const set of ["CapPrm", "CapEff", "CapAmb"]) {
      const caps = statusField(status, set);
      if (caps === undefined || BigInt(`0x${caps}`) !== 0n)
        problems.push(`thread ${task} has ${set} ${caps}`);
    }
  }
  try {
    process.setuid!(0);
    problems.push("setuid(0) succeeded");
  } catch {
    // refused, as it must be
  }
  if (problems.length > 0)
    throw new SpareClaimError(
      `spare worker: the switch to uid ${claim.uid} did not hold: ${problems.join("; ")}`,
    );
}

/**
 * Waits for the claim at `fifo` (blocking: nothing else runs in a spare), becomes the claimed
 * computer's user and takes its environment. Throws SpareClaimError (the caller exits 2).
 */
export function awaitSpareClaim(fifo: string): void {
  process.stdout.write(`${spareReadyLine}\n`);
  let text: string;
  try {
    text = readFileSync(fifo, "utf8");
  } catch (error) {
    throw new SpareClaimError(`spare worker: cannot read the claim: ${(error as Error).message}`);
  }
  const claim = parseSpareClaim(text);
  try {
    process.setgroups!([]);
    process.setgid!(claim.gid);
    process.setuid!(claim.uid);
  } catch (error) {
    throw new SpareClaimError(
      `spare worker: cannot become uid ${claim.uid}: ${(error as Error).message}`,
    );
  }
  checkSwitched(claim);
  for (const name of Object.keys(process.env)) delete process.env[name];
  Object.assign(process.env, claim.env);
}
