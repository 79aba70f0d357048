/** Small file-system helpers shared by the done-log and the file tools. */
import { promises as fs } from "node:fs";
import path from "node:path";

/** Temp file + (fsync) + rename + (fsync of the directory): readers see the old file or the new one. */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  durable: boolean,
  mode?: number,
): Promise<void> {
  const dir = path.dirname(file);
  const temp = path.join(
    dir,
    `.${path.basename(file)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`,
  );
  const handle = await fs.open(temp, "w");
  try {
    if (mode !== undefined) await handle.chmod(mode);
    await handle.writeFile(data);
    if (durable) await handle.datasync();
  } catch (error) {
    await handle.close();
    await fs.rm(temp, { force: true });
    throw error;
  }
  await handle.close();
  try {
    await fs.rename(temp, file);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw error;
  }
  if (durable) await fsyncDirectory(dir);
}

async function fsyncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await fs.open(dir, "r");
    await handle.sync();
  } catch (error) {
    // Some file systems cannot fsync a directory; the rename is then as durable as they allow.
    if (!isErrno(error, "EINVAL") && !isErrno(error, "EISDIR") && !isErrno(error, "EPERM"))
      throw error;
  } finally {
    await handle?.close();
  }
}

export function isErrno(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && "code" in error && error.code === code;
}

/**
 * `mkdir -p` that ends: Node's recursive mkdir retries a folder whose mkdir says ENOENT after its
 * parent was made, so a path under /proc (where that is the answer) keeps a thread at 100% CPU
 * and never settles. Here each folder is made once its parent exists, and a second ENOENT, or a
 * file where a folder should be, is the error. `mode` applies to the folders it makes.
 */
export async function makeDirectories(dir: string, mode?: number): Promise<void> {
  const target = path.resolve(dir);
  const options = mode === undefined ? {} : { mode };
  const parent = path.dirname(target);
  try {
    await fs.mkdir(target, options);
    return;
  } catch (error) {
    if (isErrno(error, "EEXIST")) return expectDirectory(target, error);
    if (!isErrno(error, "ENOENT") || parent === target) throw error;
  }
  await makeDirectories(parent, mode);
  try {
    await fs.mkdir(target, options);
  } catch (error) {
    if (!isErrno(error, "EEXIST")) throw error; // made meanwhile by someone else, or the error
    await expectDirectory(target, error);
  }
}

async function expectDirectory(target: string, error: unknown): Promise<void> {
  if (!(await fs.stat(target)).isDirectory()) throw error;
}
