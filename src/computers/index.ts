export type {
  ComputerIsolation,
  ComputerPaths,
  ComputerProvider,
  ComputerRuntimeStatus,
  LocalIsolation,
  WakeRequest,
} from "./provider.ts";
export { isolationOf } from "./provider.ts";
export {
  computerKinds,
  computerStates,
  nextComputerState,
  selfHostedStates,
  type ComputerKind,
  type ComputerState,
  type ComputerInput,
  type SelfHostedState,
} from "./lifecycle.ts";
export {
  createComputerObject,
  computerObjectName,
  type ComputerObject,
  type ComputerStatus,
  type ControlPlaneDependencies,
  type EnsureAwakeRequest,
  type UseSelfHostedRequest,
} from "./control-plane.ts";
export {
  createComputerHost,
  createComputerHostService,
  hostServiceName,
  hostServicePath,
  type ComputerHost,
  type HostStopResult,
} from "./home-host.ts";
export { createControlPlaneClient, type ControlPlaneClient } from "./client.ts";
export { createProcessProvider, type ProcessProviderOptions } from "./process/index.ts";
export {
  createLocalProvider,
  insidePaths,
  type LocalProvider,
  type LocalProviderOptions,
} from "./local/index.ts";
export { prepareWorkerBuild, workerNodeOptions, type WorkerBuild } from "./worker-build.ts";
export {
  detectHost,
  chooseComputerProvider,
  unprivilegedLimits,
  type HostReport,
} from "./detect.ts";
export {
  prepareHost,
  runPackageCommand,
  type HostSetup,
  type HostSetupOptions,
  type PackageCommandRunner,
} from "./host-setup.ts";
export { forwarderPorts } from "./local/index.ts";
