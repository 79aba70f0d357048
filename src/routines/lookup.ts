/** RoutineLookup (types.ts) from the store: what the budget module reads of a routine. */
import type { Store } from "../store/index.ts";
import type { RoutineLookup } from "./types.ts";

export function createRoutineLookup(store: Store): RoutineLookup {
  return {
    async routineSettings(routineId) {
      const routine = await store.getRoutine(routineId);
      if (routine === undefined) return null;
      return {
        ownerAccountId: routine.accountId,
        budget: routine.budget,
        triageModel: routine.triageModel,
      };
    },
  };
}
