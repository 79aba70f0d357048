/** Small file-system helpers shared by the done-log and the file tools. */
import { promises as fs } from "node:fs";
import path from "node:path";

/** Temp file + (fsync) + rename + (fsync of the directory): readers see the old file or the new one. */
export async function writeFileAtomic(
  file        ,
  data                     ,
  durable         ,
  mode         ,
)                {
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

async function fsyncDirectory(dir        )                {
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

export function isErrno(error         , code        )          {
  return typeof error === "object" && error !== null && "code" in error && error.code === code;
}
