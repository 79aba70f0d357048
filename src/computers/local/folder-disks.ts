/**
 * A local computer's durable disk as plain folders, for the `unprivileged` mode (a server without
 * root cannot mount a disk image): `<dataDir>/<computerId>/disk/` holds `home/`, `workspace/` and
 * `worker/`, owned by the server's uid like everything else of the computer. There is no disk
 * limit: a computer can fill the file system the data dir is on (docs/computers.md, "Without
 * root"). The same interface as the disk images (disk-image.ts), so the provider treats both alike.
 *
 * A server started as root later on the same data dir moves such a disk into an image at its
 * next wake (disk-image.ts, DISK4: `disk/` is an old layout whose contents move).
 *
 * Invariants:
 *   FDISK1 the computer's folders are created 0700 under a 0700 host folder: no other user of
 *          the host can enter them, and no other computer sees them (its sandbox mounts only its
 *          own, sandbox.ts).
 */
import { chmod, lstat, mkdir, rm } from "node:fs/promises";
import path from "node:path";
import type { ComputerPaths } from "../provider.ts";
import { diskDirName, type DiskImages } from "./disk-image.ts";
import { isErrno } from "./system.ts";

export function createFolderDisks(options: { dataDir: string }): DiskImages {
  const { dataDir } = options;
  const hostDir = (computerId: string) => path.join(dataDir, computerId);
  const paths = (computerId: string): ComputerPaths => {
    const root = path.join(hostDir(computerId), diskDirName);
    return {
      root,
      home: path.join(root, "home"),
      workspace: path.join(root, "workspace"),
      workerState: path.join(root, "worker"),
    };
  };
  const exists = async (file: string) => {
    try {
      await lstat(file);
      return true;
    } catch (error) {
      if (isErrno(error, "ENOENT")) return false;
      throw error;
    }
  };

  return {
    dataDir,
    hostDir,
    paths,
    exists: (computerId) => exists(hostDir(computerId)),
    isAttached: (computerId) => exists(paths(computerId).root),

    async attach(computerId) {
      const disk = paths(computerId);
      // FDISK1
      for (const folder of [hostDir(computerId), disk.root]) {
        await mkdir(folder, { recursive: true, mode: 0o700 });
        await chmod(folder, 0o700);
      }
      await Promise.all(
        [disk.home, disk.workspace, disk.workerState].map((folder) =>
          mkdir(folder, { recursive: true, mode: 0o700 }),
        ),
      );
      return disk;
    },

    // Folders are always there: nothing to attach or detach.
    detach: async () => undefined,
    detachAll: async () => undefined,

    async remove(computerId) {
      await rm(hostDir(computerId), { recursive: true, force: true });
    },
  };
}
