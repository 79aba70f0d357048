/** The worker-location part of the store (worker-location-types.ts, WL1–WL2), one SQL for both. */
import type { SqlDriver } from "./driver.ts";
import type { WorkerLocation, WorkerLocationStore } from "./worker-location-types.ts";

interface LocationRow {
  computer_id: string;
  node_url: string;
  worker_id: string;
  connected_at: number | string;
}

export function createWorkerLocationQueries(driver: SqlDriver): WorkerLocationStore {
  return {
    async setWorkerLocation(location: WorkerLocation) {
      // WL1: one row per computer, replaced by the newest connection.
      await driver.run(
        `INSERT INTO worker_locations (computer_id, node_url, worker_id, connected_at)
         VALUES (?, ?, ?, ?)
         ON CONFLICT (computer_id) DO UPDATE SET node_url = excluded.node_url,
           worker_id = excluded.worker_id, connected_at = excluded.connected_at`,
        [location.computerId, location.nodeUrl, location.workerId, location.connectedAt],
      );
    },

    async getWorkerLocation(computerId) {
      const rows = await driver.all<LocationRow>(
        "SELECT * FROM worker_locations WHERE computer_id = ?",
        [computerId],
      );
      const row = rows[0];
      return row === undefined
        ? undefined
        : {
            computerId: row.computer_id,
            nodeUrl: row.node_url,
            workerId: row.worker_id,
            connectedAt: Number(row.connected_at),
          };
    },

    async clearWorkerLocation(computerId, nodeUrl, workerId) {
      // WL2
      const { changes } = await driver.run(
        workerId === undefined
          ? "DELETE FROM worker_locations WHERE computer_id = ? AND node_url = ?"
          : "DELETE FROM worker_locations WHERE computer_id = ? AND node_url = ? AND worker_id = ?",
        workerId === undefined ? [computerId, nodeUrl] : [computerId, nodeUrl, workerId],
      );
      return changes > 0;
    },

    async clearNodeWorkerLocations(nodeUrl) {
      const { changes } = await driver.run("DELETE FROM worker_locations WHERE node_url = ?", [
        nodeUrl,
      ]);
      return changes;
    },
  };
}
