/**
 * Egress: the host-side proxy every computer's traffic leaves through (one pair of unix sockets
 * per computer: HTTP proxy and SOCKS5), and the policy it enforces. docs/egress.md describes the
 * policy format, the defaults and what is refused.
 */
export {
  classifyAddress,
  classifyRange,
  formatIp,
  normalizeIp,
  parseCidr,
  parseIp,
  rangeContains,
  unreachableClasses,
  type AddressClass,
  type IpRange,
  type ParsedIp,
} from "./addresses.ts";
export { auditDetail, auditTo, type EgressAuditOptions, type EgressAuditSink } from "./audit.ts";
export type { EgressInterception, EgressInterceptor } from "./intercept.ts";
export { defaultHostGroups, defaultHostPorts, defaultHosts } from "./defaults.ts";
export {
  checkAddress,
  checkDestination,
  checkName,
  compilePolicy,
  egressModes,
  egressPolicySchema,
  formatTarget,
  normalizeRule,
  parseEgressPolicy,
  parseUserEgressPolicy,
  type CompiledPolicy,
  type DestinationContext,
  type EgressDenial,
  type EgressMode,
  type EgressPolicy,
  type EgressPolicyInput,
  type EgressRule,
  type EgressRuleInput,
  type EgressTarget,
  type NameVerdict,
  type PortSpec,
} from "./policy.ts";
export {
  createDestinationContext,
  createEgressProxy,
  egressHeader,
  parseAllowPrivate,
  type ComputerEgressSockets,
  type EgressListener,
  type EgressLogEntry,
  type EgressProxy,
  type EgressProxyOptions,
  type EgressRefusalCode,
  type EgressResolver,
  type EgressStats,
} from "./proxy.ts";
