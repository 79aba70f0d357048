/**
 * engine/: the durable engine (Restate) that runs Roost's loops. Embedded by default — a
 * supervised restate-server child with its data under the data dir — or an external Restate
 * reached by URL; the rest of Roost sees the same {@link RestateEngine} either way.
 * Decisions and operating notes: docs/decisions/0001-restate-embedded.md.
 */
export type { RestateEngine } from "./types.ts";
export {
  startEmbeddedRestate,
  resolveRestateBinary,
  findFreePort,
  nextSupervisorState,
  embeddedRestateDefaults,
} from "./embedded-restate.ts";
export type {
  EmbeddedRestate,
  EmbeddedRestateOptions,
  EngineEvent,
  SupervisorInput,
  SupervisorState,
} from "./embedded-restate.ts";
export { connectExternalRestate } from "./external-restate.ts";
export { ensureRequestIdentity, restatePublicKey } from "./request-identity.ts";
export type { RequestIdentity } from "./request-identity.ts";
export type { ExternalRestateOptions } from "./external-restate.ts";
export { registerDeployment } from "./deployments.ts";
export type { RegisterDeploymentOptions, RegisteredDeployment } from "./deployments.ts";
export { probeRestateHealth, waitUntilHealthy } from "./health.ts";
export type { HealthProbe } from "./health.ts";
export { EngineUnavailableError } from "./errors.ts";
export { restateConfigDefaults } from "./restate-config.ts";
export { durableObjectRetryPolicy } from "./object-options.ts";
export {
  CallFailedError,
  StepFailedError,
  waitForMessages,
  type DurableContext,
  type ExternalPromise,
  type ObjectTarget,
  type SendOptions,
  type StepOptions,
} from "./durable.ts";
export { createRestateDurable } from "./restate-durable.ts";
