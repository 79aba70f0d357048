/** Helpers for snapshot tests: describe a folder tree exactly, so two trees can be compared. */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join, relative } from "node:path";

/**
 * One line per entry (sorted by path): type, mode, owner, mtime in ns, and the content hash,
 * link target or hard-link group. The root's mtime and the snapshot marker are left out: writing
 * the marker changes the root's mtime, and the marker is local bookkeeping, not content.
 */
export function describeTree(root: string, options: { skip?: string[] } = {}): string[] {
  const lines: string[] = [];
  const firstPathOfInode = new Map<bigint, string>();
  const skip = new Set([".roost-snapshot.json", ...(options.skip ?? [])]);
  function visit(path: string) {
    const name = relative(root, path) || ".";
    if (skip.has(name)) return;
    const stats = lstatSync(path, { bigint: true });
    const mode = (stats.mode & 0o7777n).toString(8).padStart(4, "0");
    const owner = `${stats.uid}:${stats.gid}`;
    const mtime = name === "." ? "-" : stats.mtimeNs.toString();
    if (stats.isDirectory()) {
      lines.push(`${name} dir ${mode} ${owner} ${mtime}`);
      for (const entry of readdirSync(path).sort()) visit(join(path, entry));
    } else if (stats.isSymbolicLink()) {
      lines.push(`${name} symlink -> ${readlinkSync(path)} ${owner} ${mtime}`);
    } else if (stats.isFile()) {
      const hash = createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 16);
      let link = "";
      if (stats.nlink > 1n) {
        const first = firstPathOfInode.get(stats.ino);
        if (first === undefined) firstPathOfInode.set(stats.ino, name);
        link = ` hardlink-group:${first ?? name}`;
      }
      lines.push(`${name} file ${mode} ${owner} ${mtime} ${stats.size} ${hash}${link}`);
    } else {
      lines.push(`${name} other ${mode} ${owner}`);
    }
  }
  visit(root);
  return lines;
}
