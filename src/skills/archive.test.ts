/** Reading a skill's archive (archive.ts): what is accepted, and the attacks SKA1–SKA4 refuse. */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { skillLimits } from "../protocol/index.ts";
import { archiveKindOf, archiveLimits, readSkillArchive } from "./archive.ts";
import { paxPath, skillMarkdown, tarArchive, tarGz, zipArchive } from "./testing/archives.ts";

const skillMd = skillMarkdown("demo", "A demo skill");
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

/** What a refusal looks like: its code and a message that names the problem. */
async function refused(promise: Promise<unknown>, code: string, pattern: RegExp) {
  const error = (await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )) as { code?: string; message?: string } | undefined;
  expect(error, "the archive was accepted").toBeDefined();
  expect(error?.code).toBe(code);
  expect(error?.message).toMatch(pattern);
}

describe("skill archives: what is accepted", () => {
  it("reads a tar with SKILL.md at its root, keeping the executable bit and binary bytes", async () => {
    const binary = new Uint8Array([0, 255, 1, 254]);
    const files = await readSkillArchive(
      tarArchive([
        { path: "SKILL.md", data: skillMd },
        { path: "scripts/", type: "5" },
        { path: "scripts/run.sh", data: "echo hi\n", mode: 0o755 },
        { path: "data.bin", data: binary },
      ]),
      "tar",
    );
    expect(files.map((file) => [file.path, file.mode])).toEqual([
      ["SKILL.md", 0o644],
      ["scripts/run.sh", 0o755],
      ["data.bin", 0o644],
    ]);
    expect(Array.from(files[2]!.content)).toEqual(Array.from(binary));
  });

  it("strips one top folder and ./ prefixes, and drops macOS's __MACOSX and .DS_Store", async () => {
    const files = await readSkillArchive(
      tarGz([
        { path: "./", type: "5" },
        { path: "./my-skill/", type: "5" },
        { path: "./my-skill/SKILL.md", data: skillMd },
        { path: "./my-skill/lib/util.py", data: "print(1)" },
        { path: "./my-skill/.DS_Store", data: "junk" },
      ]),
      "tar.gz",
    );
    expect(files.map((file) => file.path)).toEqual(["SKILL.md", "lib/util.py"]);

    const zipped = await readSkillArchive(
      zipArchive([
        { path: "my-skill/", unixMode: 0o040755 },
        { path: "my-skill/SKILL.md", data: skillMd },
        { path: "my-skill/run.sh", data: "echo", unixMode: 0o100755 },
        { path: "__MACOSX/my-skill/._run.sh", data: "resource fork" },
      ]),
      "zip",
    );
    expect(zipped.map((file) => [file.path, file.mode])).toEqual([
      ["SKILL.md", 0o644],
      ["run.sh", 0o755],
    ]);
  });

  it("reads archives made by the system's tar and zip tools", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-skill-archive-"));
    try {
      mkdirSync(join(dir, "pdf-tools", "bin"), { recursive: true });
      writeFileSync(join(dir, "pdf-tools", "SKILL.md"), skillMarkdown("pdf-tools", "PDFs"));
      writeFileSync(join(dir, "pdf-tools", "bin", "extract.sh"), "#!/bin/sh\necho text\n");
      chmodSync(join(dir, "pdf-tools", "bin", "extract.sh"), 0o755);
      // A long path needs the pax or GNU extensions.
      const long = `${`${"d".repeat(60)}/`.repeat(4)}file.txt`;
      mkdirSync(join(dir, "pdf-tools", long, ".."), { recursive: true });
      writeFileSync(join(dir, "pdf-tools", long), "far down");
      const tar = spawnSync("tar", ["-czf", join(dir, "s.tgz"), "-C", dir, "pdf-tools"]);
      expect(tar.status).toBe(0);
      const files = await readSkillArchive(readFileSync(join(dir, "s.tgz")), "tar.gz");
      expect(files.map((file) => file.path).sort()).toEqual(
        ["SKILL.md", "bin/extract.sh", long].sort(),
      );
      expect(files.find((file) => file.path === "bin/extract.sh")?.mode).toBe(0o755);
      // Info-ZIP's zip (.ci/run installs it); without it, outside CI, that half does not run.
      const zip = spawnSync("zip", ["-qr", join(dir, "s.zip"), "pdf-tools"], { cwd: dir });
      if (zip.error !== undefined && process.env.CI === "true")
        throw new Error("CI needs zip (apt-get install zip)");
      if (zip.error === undefined) {
        expect(zip.status).toBe(0);
        const zipped = await readSkillArchive(readFileSync(join(dir, "s.zip")), "zip");
        expect(zipped.find((file) => file.path === "bin/extract.sh")?.mode).toBe(0o755);
        expect(text(zipped.find((file) => file.path === long)!.content)).toBe("far down");
      } else {
        console.warn("zip is not installed: the system-zip half of this test did not run");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("knows the media types, and refuses a body that is not what its type says", async () => {
    expect(archiveKindOf("application/x-tar")).toBe("tar");
    expect(archiveKindOf("application/gzip; charset=binary")).toBe("tar.gz");
    expect(archiveKindOf("application/zip")).toBe("zip");
    expect(archiveKindOf("application/json")).toBeUndefined();
    const tar = tarArchive([{ path: "SKILL.md", data: skillMd }]);
    await refused(readSkillArchive(tar, "zip"), "invalid_request", /not a zip archive/);
    await refused(readSkillArchive(tar, "tar.gz"), "invalid_request", /not gzip-compressed/);
    await refused(readSkillArchive(gzipSync(tar), "tar"), "invalid_request", /compressed/);
    await refused(
      readSkillArchive(Buffer.from("not an archive at all, just text".repeat(40)), "tar"),
      "invalid_request",
      /not a valid tar/,
    );
  });
});

describe("skill archives: attacks", () => {
  const withSkill = (extra: Parameters<typeof tarArchive>[0]) =>
    tarArchive([{ path: "SKILL.md", data: skillMd }, ...extra]);

  it("path traversal with ../ is refused (tar, pax header, zip)", async () => {
    await refused(
      readSkillArchive(withSkill([{ path: "../../etc/cron.d/evil", data: "x" }]), "tar"),
      "invalid_request",
      /`\.\.` component/,
    );
    await refused(
      readSkillArchive(withSkill([{ path: "lib/../../escape", data: "x" }]), "tar"),
      "invalid_request",
      /`\.\.` component/,
    );
    // The ustar header says ok.txt; the pax record that overrides it climbs out.
    await refused(
      readSkillArchive(
        withSkill([paxPath("../outside.txt"), { path: "ok.txt", data: "x" }]),
        "tar",
      ),
      "invalid_request",
      /`\.\.` component/,
    );
    await refused(
      readSkillArchive(
        zipArchive([
          { path: "SKILL.md", data: skillMd },
          { path: "../evil.sh", data: "x" },
        ]),
        "zip",
      ),
      "invalid_request",
      /invalid relative path/,
    );
  });

  it("absolute paths are refused (tar, zip)", async () => {
    await refused(
      readSkillArchive(withSkill([{ path: "/etc/passwd", data: "x" }]), "tar"),
      "invalid_request",
      /absolute path/,
    );
    await refused(
      readSkillArchive(
        zipArchive([
          { path: "SKILL.md", data: skillMd },
          { path: "/root/.ssh/authorized_keys", data: "x" },
        ]),
        "zip",
      ),
      "invalid_request",
      /absolute path/,
    );
  });

  it("symbolic links are refused (tar, zip)", async () => {
    await refused(
      readSkillArchive(withSkill([{ path: "passwd", type: "2", linkpath: "/etc/passwd" }]), "tar"),
      "invalid_request",
      /symbolic link/,
    );
    await refused(
      readSkillArchive(
        zipArchive([
          { path: "SKILL.md", data: skillMd },
          { path: "home", data: "/home/user", unixMode: 0o120777 },
        ]),
        "zip",
      ),
      "invalid_request",
      /symbolic link/,
    );
  });

  it("hard links are refused", async () => {
    await refused(
      readSkillArchive(withSkill([{ path: "copy", type: "1", linkpath: "SKILL.md" }]), "tar"),
      "invalid_request",
      /hard link/,
    );
  });

  it("device files and FIFOs are refused (tar, zip)", async () => {
    for (const type of ["3", "4", "6"])
      await refused(
        readSkillArchive(withSkill([{ path: `dev${type}`, type }]), "tar"),
        "invalid_request",
        /device or FIFO/,
      );
    await refused(
      readSkillArchive(
        zipArchive([
          { path: "SKILL.md", data: skillMd },
          { path: "null", data: "", unixMode: 0o020666 },
        ]),
        "zip",
      ),
      "invalid_request",
      /device, FIFO or socket/,
    );
  });

  it("a path given twice, or both a file and a folder, is refused", async () => {
    await refused(
      readSkillArchive(withSkill([{ path: "SKILL.md", data: "second" }]), "tar"),
      "invalid_request",
      /twice/,
    );
    await refused(
      readSkillArchive(
        withSkill([
          { path: "run", data: "a file" },
          { path: "run/inner", data: "below it" },
        ]),
        "tar",
      ),
      "invalid_request",
      /both a file and a folder/,
    );
  });

  it("backslashes and control characters in names are refused", async () => {
    await refused(
      readSkillArchive(withSkill([{ path: "..\\..\\evil", data: "x" }]), "tar"),
      "invalid_request",
      /backslash/,
    );
    await refused(
      readSkillArchive(withSkill([{ path: "bad\u0007name", data: "x" }]), "tar"),
      "invalid_request",
      /control character/,
    );
  });

  it("encrypted zip entries are refused", async () => {
    await refused(
      readSkillArchive(
        zipArchive([
          { path: "SKILL.md", data: skillMd },
          { path: "secret", data: "x", encrypted: true },
        ]),
        "zip",
      ),
      "invalid_request",
      /encrypted/,
    );
  });

  it("tar bomb: a declared size over the limit is refused before its bytes are read", async () => {
    // Only the header: the 50 MB it declares never arrive, and are never waited for.
    const header = tarArchive(
      [
        { path: "SKILL.md", data: skillMd },
        { path: "huge.bin", declaredSize: 50 * 1024 * 1024 },
      ],
      { end: false },
    );
    await refused(readSkillArchive(header, "tar"), "payload_too_large", /5242880 bytes/);
  });

  it("tar bomb: gzip that inflates past the limit stops at the limit", async () => {
    // 40 MB of zeros compress to about 40 kB.
    const bomb = gzipSync(
      tarArchive([
        { path: "SKILL.md", data: skillMd },
        { path: "zeros", data: new Uint8Array(40 * 1024 * 1024) },
      ]),
    );
    expect(bomb.byteLength).toBeLessThan(archiveLimits.maxArchiveBytes);
    await refused(readSkillArchive(bomb, "tar.gz"), "payload_too_large", /more than 5242880/);
  });

  it("tar bomb: many small files add up to the limit and are refused when they pass it", async () => {
    const chunk = new Uint8Array(1100 * 1024);
    await refused(
      readSkillArchive(
        withSkill(Array.from({ length: 5 }, (_, index) => ({ path: `part${index}`, data: chunk }))),
        "tar",
      ),
      "payload_too_large",
      /5242880/,
    );
    await refused(
      readSkillArchive(
        withSkill(
          Array.from({ length: skillLimits.maxFiles }, (_, index) => ({
            path: `f${index}`,
            data: "x",
          })),
        ),
        "tar",
      ),
      "invalid_request",
      /at most 200 files/,
    );
  });

  it("zip bomb: a declared size over the limit is refused before inflating", async () => {
    await refused(
      readSkillArchive(
        zipArchive([
          { path: "SKILL.md", data: skillMd },
          { path: "big", data: "small", declaredSize: 50 * 1024 * 1024 },
        ]),
        "zip",
      ),
      "payload_too_large",
      /5242880/,
    );
  });

  it("zip bomb: an entry that inflates past what it declares is stopped", async () => {
    // Declares 1 kB; its deflate stream holds 40 MB of zeros.
    const bomb = zipArchive([
      { path: "SKILL.md", data: skillMd },
      { path: "bomb", data: new Uint8Array(40 * 1024 * 1024), declaredSize: 1024 },
    ]);
    expect(bomb.byteLength).toBeLessThan(archiveLimits.maxArchiveBytes);
    const error = (await readSkillArchive(bomb, "zip").catch((caught: unknown) => caught)) as {
      code?: string;
      message?: string;
    };
    expect(error.code).toMatch(/^(invalid_request|payload_too_large)$/);
    expect(error.message).toMatch(/too many bytes|5242880/);
  });

  it("zip bomb: entries that inflate past the skill's limit together are stopped at it", async () => {
    const entries = Array.from({ length: 3 }, (_, index) => ({
      path: `zeros${index}`,
      data: new Uint8Array(2 * 1024 * 1024),
    }));
    await refused(
      readSkillArchive(zipArchive([{ path: "SKILL.md", data: skillMd }, ...entries]), "zip"),
      "payload_too_large",
      /5242880/,
    );
  });

  it("an archive without SKILL.md at its root or in one top folder is refused", async () => {
    await refused(
      readSkillArchive(tarArchive([{ path: "README.md", data: "hi" }]), "tar"),
      "invalid_request",
      /no SKILL\.md at its root or inside one top folder/,
    );
    await refused(
      readSkillArchive(
        tarArchive([
          { path: "a/SKILL.md", data: skillMd },
          { path: "b/other.txt", data: "x" },
        ]),
        "tar",
      ),
      "invalid_request",
      /no SKILL\.md/,
    );
  });

  it("a body over the archive limit is refused before it is parsed", async () => {
    await refused(
      readSkillArchive(new Uint8Array(archiveLimits.maxArchiveBytes + 1), "tar"),
      "payload_too_large",
      /at most 6291456 bytes/,
    );
  });
});
