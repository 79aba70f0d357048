/**
 * SC1 and SC2 (spare-claim.ts): what a claim may hold, and the switch in a real process started
 * the way a spare's worker is (root, through setpriv, with only ambient CAP_SETUID and CAP_SETGID).
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { parseSpareClaim, SpareClaimError } from "./spare-claim.ts";
import { findExecutable, runChecked } from "../computers/local/system.ts";

describe("parseSpareClaim (SC1)", () => {
  test("takes a uid, a gid and an environment", () => {
    expect(parseSpareClaim('{"uid":200001,"gid":200001,"env":{"HOME":"/home/user"}}')).toEqual({
      uid: 200_001,
      gid: 200_001,
      env: { HOME: "/home/user" },
    });
  });

  test.each([
    ["an empty claim (the host gave the spare up)", "", /empty/],
    ["text that is not JSON", "{", /not JSON/],
    ["an array", "[]", /not an object/],
    ["uid 0", '{"uid":0,"gid":5,"env":{}}', /uid and gid/],
    ["gid 0", '{"uid":5,"gid":0,"env":{}}', /uid and gid/],
    ["a negative uid", '{"uid":-1,"gid":5,"env":{}}', /uid and gid/],
    ["a fractional uid", '{"uid":1.5,"gid":5,"env":{}}', /uid and gid/],
    ["a uid as text", '{"uid":"5","gid":5,"env":{}}', /uid and gid/],
    ["a field of its own", '{"uid":5,"gid":5,"env":{},"caps":"all"}', /unknown fields: caps/],
    ["a value that is not text", '{"uid":5,"gid":5,"env":{"A":1}}', /bad entry A/],
    ["a name with =", '{"uid":5,"gid":5,"env":{"A=B":"c"}}', /bad entry/],
    ["no env", '{"uid":5,"gid":5}', /env must be an object/],
  ])("refuses %s", (_, text, message) => {
    expect(() => parseSpareClaim(text)).toThrow(SpareClaimError);
    expect(() => parseSpareClaim(text)).toThrow(message);
  });
});

const root = process.getuid?.() === 0;
const setpriv = await findExecutable("setpriv", undefined);
const mainPath = fileURLToPath(new URL("./main.ts", import.meta.url));

/** Starts the real worker as a spare would be, writes `claim` to its FIFO, returns how it ended. */
async function runSpare(claim: string) {
  const dir = await mkdtemp(path.join(tmpdir(), "roost-spare-claim-"));
  const fifo = path.join(dir, "claim");
  try {
    await runChecked("mkfifo", ["-m", "0600", fifo]);
    const keep = "-all,+setuid,+setgid";
    const child = spawn(
      setpriv!,
      [
        `--inh-caps=${keep}`,
        `--ambient-caps=${keep}`,
        "--",
        setpriv!,
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
        process.execPath,
        mainPath,
      ],
      { env: { PATH: process.env.PATH, ROOST_SPARE_CLAIM: fifo }, cwd: "/" },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const ended = new Promise<number | null>((resolve) => child.once("close", resolve));
    await new Promise<void>((resolve) => {
      const check = () => (stdout.includes("roost-spare-worker-ready") ? resolve() : undefined);
      child.stdout.on("data", check);
    });
    const { open } = await import("node:fs/promises");
    const handle = await open(fifo, "w");
    await handle.write(claim);
    await handle.close();
    return { code: await ended, stdout, stderr };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe.skipIf(!root || setpriv === undefined)("a spare worker's claim (SC1, SC2)", () => {
  test("after a claim it is the claimed uid with the claim's environment (its own is gone)", async () => {
    // No worker configuration in the claim: the worker switches, then stops at its configuration
    // (exit 2), which it reads from the claim's environment alone.
    const result = await runSpare('{"uid":200999,"gid":200998,"env":{"ROOST_WORKSPACE":"/"}}');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("gateway URL is required");
    expect(result.stderr).not.toContain("did not hold");
  }, 30_000);

  test("attack: a claim for uid 0 is refused, and the worker ends without running anything", async () => {
    const result = await runSpare('{"uid":0,"gid":0,"env":{}}');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("uid and gid must be from 1");
  }, 30_000);
});
