/** The gateway: where workers dial in, and through which the loop runs computer tools. */
export { createGateway } from "./gateway.ts";
export type {
  CallOptions,
  CallRequest,
  CallResult,
  Gateway,
  GatewayEvent,
  GatewayOptions,
  WorkerInfo,
} from "./gateway.ts";
export { TunnelStream } from "./tunnels.ts";
export type { TunnelEvent, TunnelOptions } from "./tunnels.ts";
export { createForwardingGateway, startNodeEndpoint } from "./forwarding.ts";
export type {
  ForwardingOptions,
  NodeEndpoint,
  NodeEndpointOptions,
  NodeGateway,
  WorkerLocations,
} from "./forwarding.ts";
