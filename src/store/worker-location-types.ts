/**
 * Where each computer's worker is connected (issue 17 §2, decision 0039): the internal URL of the
 * node whose gateway holds its connection, so a call made on any other node is forwarded there.
 *
 * Invariants (both implementations; checked by worker-locations.test.ts):
 *   WL1 At most one location per computer; a (re)connect replaces it, whichever node held it.
 *   WL2 A node clears only its own entry: a disconnect seen late on node A never erases the
 *       connection the worker made to node B meanwhile.
 */
export interface WorkerLocation {
  computerId: string;
  /** The holding node's internal URL (ROOST_NODE_URL). */
  nodeUrl: string;
  workerId: string;
  /** Epoch ms. */
  connectedAt: number;
}

export interface WorkerLocationStore {
  /** WL1: records that `nodeUrl` holds the computer's worker now. */
  setWorkerLocation(location: WorkerLocation): Promise<void>;
  getWorkerLocation(computerId: string): Promise<WorkerLocation | undefined>;
  /** WL2: removes the entry only while it still names `nodeUrl` (and, if given, `workerId`). */
  clearWorkerLocation(computerId: string, nodeUrl: string, workerId?: string): Promise<boolean>;
  /** Removes every entry of `nodeUrl` (the node starts, or stops: none of its connections remain). */
  clearNodeWorkerLocations(nodeUrl: string): Promise<number>;
}
