/**
 * routines/: a bot's scheduled and webhook-started work (issue 11 §1, docs/routines.md,
 * decision 0018). Schedules live in Restate (scheduler.ts), runs are messages delivered to the
 * bot (runs.ts), the API's side is service.ts.
 */
export {
  cronOf,
  isScheduleTrigger,
  nextSlot,
  slotsBetween,
  validateSchedule,
  type ScheduleTrigger,
} from "./schedule.ts";
export {
  armRoutine,
  createRoutineObject,
  fireRoutine,
  routineObjectName,
  slotRunId,
  type ArmRequest,
  type FireRequest,
  type SchedulerDependencies,
  type SchedulerState,
  type StateCell,
} from "./scheduler.ts";
export {
  createRunSettler,
  payloadOfRunMessage,
  runMessageText,
  startRun,
  type DeliveredMessage,
  type RunDependencies,
  type RunRequest,
} from "./runs.ts";
export {
  createRoutineService,
  createSchedulerClient,
  hashWebhookKey,
  newWebhookKey,
  previewNextRun,
  runView,
  webhookKeyMatches,
  type RoutineInput,
  type RoutineService,
  type RoutineServiceDependencies,
  type SchedulerClient,
} from "./service.ts";
export { createRoutineLookup } from "./lookup.ts";
export {
  defaultRoutineSettings,
  noRunUsage,
  type RoutineLookup,
  type RoutineSettings,
  type RunUsage,
} from "./types.ts";
