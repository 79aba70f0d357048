/** Worker locations (worker-location-types.ts, WL1–WL2) on SQLite and on Postgres. */
import { describe, expect, it } from "vitest";
import { storeOpeners } from "./testing/openers.ts";

const openers = await storeOpeners("roost-worker-locations-");

describe.each(openers)("worker locations on %s", (_name, open) => {
  it.skipIf(open === undefined)(
    "WL1: a reconnect to another node replaces the location",
    async () => {
      const { store, close } = await open!();
      try {
        await store.setWorkerLocation({
          computerId: "cmp_1",
          nodeUrl: "http://a:1",
          workerId: "w1",
          connectedAt: 1,
        });
        await store.setWorkerLocation({
          computerId: "cmp_1",
          nodeUrl: "http://b:1",
          workerId: "w1",
          connectedAt: 2,
        });
        expect(await store.getWorkerLocation("cmp_1")).toEqual({
          computerId: "cmp_1",
          nodeUrl: "http://b:1",
          workerId: "w1",
          connectedAt: 2,
        });
        expect(await store.getWorkerLocation("cmp_other")).toBeUndefined();
      } finally {
        await close();
      }
    },
  );

  it.skipIf(open === undefined)(
    "WL2: a late disconnect on the old node leaves the new node's entry; a node clears its own",
    async () => {
      const { store, close } = await open!();
      try {
        await store.setWorkerLocation({
          computerId: "cmp_1",
          nodeUrl: "http://b:1",
          workerId: "w1",
          connectedAt: 2,
        });
        await store.setWorkerLocation({
          computerId: "cmp_2",
          nodeUrl: "http://b:1",
          workerId: "w2",
          connectedAt: 2,
        });
        expect(await store.clearWorkerLocation("cmp_1", "http://a:1")).toBe(false);
        expect(await store.clearWorkerLocation("cmp_1", "http://b:1", "another-worker")).toBe(
          false,
        );
        expect((await store.getWorkerLocation("cmp_1"))?.nodeUrl).toBe("http://b:1");
        expect(await store.clearWorkerLocation("cmp_1", "http://b:1", "w1")).toBe(true);
        expect(await store.getWorkerLocation("cmp_1")).toBeUndefined();
        expect(await store.clearNodeWorkerLocations("http://b:1")).toBe(1);
        expect(await store.getWorkerLocation("cmp_2")).toBeUndefined();
      } finally {
        await close();
      }
    },
  );
});
