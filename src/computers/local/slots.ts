/**
 * Host-wide slots. Slot N gives a computer its host uid and gid (`uidBase + N`) and the names of
 * its host resources (cgroup `cN`, runtime folder `cN`). Every Roost server on the host shares
 * one registry folder, so two servers (or two test files) never hand out the same uid.
 *
 * Invariants:
 *   S1 a slot belongs to at most one computer on the host: a claim is a file created with O_EXCL
 *      in the registry, naming the computer's folder.
 *   S2 a claim is stale only if the computer it names no longer records that slot in its
 *      `local.json`, and the claim is older than the grace period (a computer being created writes
 *      its `local.json` just after claiming); a stale claim is taken over by rename, and the
 *      renamed file is checked to be the one judged stale.
 *   S3 a computer keeps its slot across restarts (it is recorded in `local.json` in its folder,
 *      so files keep their owner); it gets a new slot only when that one is now claimed by
 *      another computer (for example after a move to another host).
 */
import { randomBytes } from "node:crypto";
import { link, mkdir, readFile, readdir, rename, stat, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { isErrno } from "./system.ts";

/** What a computer's folder records about its slot (`<root>/local.json`). */
export interface SlotRecord {
  slot: number;
  uid: number;
  gid: number;
}

interface ClaimFile {
  root: string;
  computerId: string;
  claimedAt: number;
}

export interface SlotRegistryOptions {
  /** The host-wide registry folder. */
  dir: string;
  /** How many slots exist (the size of the uid range). */
  slots: number;
  uidBase: number;
  /** A claim younger than this is never judged stale (S2). @default 60 s */
  graceMs?: number;
  now?: () => number;
}

export const slotRecordFile = "local.json";

export interface SlotRegistry {
  /** The computer's slot: its recorded one if still its own (S3), else a new claim. */
  ensure(root: string, computerId: string): Promise<SlotRecord & { changed: boolean }>;
  /** Releases the computer's claim (on destroy). */
  release(root: string): Promise<void>;
  /** The computer's recorded slot, without claiming anything. */
  read(root: string): Promise<SlotRecord | undefined>;
}

export function createSlotRegistry(options: SlotRegistryOptions): SlotRegistry {
  const claimsDir = path.join(options.dir, "slots");
  const graceMs = options.graceMs ?? 60_000;
  const now = options.now ?? Date.now;
  const claimPath = (slot: number) => path.join(claimsDir, String(slot));

  async function readClaim(slot: number): Promise<ClaimFile | undefined> {
    try {
      return JSON.parse(await readFile(claimPath(slot), "utf8")) as ClaimFile;
    } catch (error) {
      if (isErrno(error, "ENOENT") || error instanceof SyntaxError) return undefined;
      throw error;
    }
  }

  async function readRecord(root: string): Promise<SlotRecord | undefined> {
    try {
      const record = JSON.parse(
        await readFile(path.join(root, slotRecordFile), "utf8"),
      ) as SlotRecord;
      return Number.isInteger(record.slot) ? record : undefined;
    } catch (error) {
      if (isErrno(error, "ENOENT") || isErrno(error, "ENOTDIR") || error instanceof SyntaxError)
        return undefined;
      throw error;
    }
  }

  async function tryClaim(slot: number, root: string, computerId: string): Promise<boolean> {
    const claim: ClaimFile = { root, computerId, claimedAt: now() };
    try {
      await writeFile(claimPath(slot), JSON.stringify(claim), { flag: "wx", mode: 0o644 }); // S1
      return true;
    } catch (error) {
      if (isErrno(error, "EEXIST")) return false;
      throw error;
    }
  }

  /** S2: whether the claim on a slot no longer names a computer that holds it. */
  async function isStale(slot: number): Promise<{ stale: boolean; ino?: number }> {
    let info;
    try {
      info = await stat(claimPath(slot));
    } catch (error) {
      if (isErrno(error, "ENOENT")) return { stale: false };
      throw error;
    }
    const claim = await readClaim(slot);
    if (claim !== undefined && now() - claim.claimedAt < graceMs) return { stale: false };
    if (claim === undefined && now() - info.mtimeMs < graceMs) return { stale: false };
    const record = claim === undefined ? undefined : await readRecord(claim.root);
    return { stale: record?.slot !== slot, ino: info.ino };
  }

  async function takeOver(
    slot: number,
    ino: number,
    root: string,
    computerId: string,
  ): Promise<boolean> {
    const aside = `${claimPath(slot)}.stale-${randomBytes(4).toString("hex")}`;
    try {
      await rename(claimPath(slot), aside);
    } catch (error) {
      if (isErrno(error, "ENOENT")) return tryClaim(slot, root, computerId);
      throw error;
    }
    if ((await stat(aside)).ino !== ino) {
      // Someone claimed it between our check and our rename: give it back (S2).
      await link(aside, claimPath(slot)).catch(() => undefined);
      await unlink(aside).catch(() => undefined);
      return false;
    }
    await unlink(aside);
    return tryClaim(slot, root, computerId);
  }

  async function claimNew(root: string, computerId: string): Promise<number> {
    await mkdir(claimsDir, { recursive: true });
    const taken = new Set(
      (await readdir(claimsDir)).filter((name) => /^\d+$/.test(name)).map(Number),
    );
    for (let slot = 0; slot < options.slots; slot++) {
      if (!taken.has(slot) && (await tryClaim(slot, root, computerId))) return slot;
    }
    for (const slot of [...taken].sort((a, b) => a - b)) {
      if (slot >= options.slots) continue;
      const { stale, ino } = await isStale(slot);
      if (stale && ino !== undefined && (await takeOver(slot, ino, root, computerId))) return slot;
    }
    throw new Error(
      `no free computer slot: all ${options.slots} are claimed in ${claimsDir} (enlarge the uid range, or destroy unused computers)`,
    );
  }

  async function writeRecord(root: string, record: SlotRecord): Promise<void> {
    const file = path.join(root, slotRecordFile);
    const temporary = `${file}.${randomBytes(4).toString("hex")}.tmp`;
    await writeFile(temporary, `${JSON.stringify(record)}\n`, { mode: 0o644 });
    await rename(temporary, file);
  }

  const toRecord = (slot: number): SlotRecord => ({
    slot,
    uid: options.uidBase + slot,
    gid: options.uidBase + slot,
  });

  return {
    read: readRecord,

    async ensure(root, computerId) {
      const recorded = await readRecord(root);
      if (recorded !== undefined && recorded.slot < options.slots) {
        await mkdir(claimsDir, { recursive: true });
        const claim = await readClaim(recorded.slot);
        const mine =
          claim?.root === root ||
          (claim === undefined && (await tryClaim(recorded.slot, root, computerId)));
        if (mine) {
          const record = toRecord(recorded.slot);
          const changed = record.uid !== recorded.uid || record.gid !== recorded.gid;
          if (changed) await writeRecord(root, record);
          return { ...record, changed };
        }
      }
      const slot = await claimNew(root, computerId); // S3: only when ours is gone
      const record = toRecord(slot);
      await writeRecord(root, record);
      return { ...record, changed: record.uid !== recorded?.uid || record.gid !== recorded.gid };
    },

    async release(root) {
      const recorded = await readRecord(root);
      if (recorded === undefined) return;
      const claim = await readClaim(recorded.slot);
      if (claim?.root !== root) return;
      await unlink(claimPath(recorded.slot)).catch((error: unknown) => {
        if (!isErrno(error, "ENOENT")) throw error;
      });
    },
  };
}
