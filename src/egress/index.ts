/**
 * Egress: the host-side proxy every computer's traffic leaves through, and the policy it
 * enforces. docs/egress.md describes the policy format, the defaults and what is refused.
 */
export {
  classifyAddress,
  formatIp,
  normalizeIp,
  parseCidr,
  parseIp,
  type AddressClass,
  type IpRange,
  type ParsedIp,
} from "./addresses.ts";
export { auditDetail, auditTo, type EgressAuditOptions, type EgressAuditSink } from "./audit.ts";
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
  createEgressProxy,
  egressHeader,
  type EgressAddress,
  type EgressLogEntry,
  type EgressProxy,
  type EgressProxyOptions,
  type EgressRefusalCode,
  type EgressResolver,
  type EgressStats,
} from "./proxy.ts";

/**
 * The environment that points a computer's programs at the proxy (the computer has no other
 * route out, and no DNS). Local addresses stay direct: they are the computer's own services.
 */
export function proxyEnvironment(proxyUrl: string): Record<string, string> {
  const noProxy = "localhost,127.0.0.1,::1";
  return {
    HTTP_PROXY: proxyUrl,
    HTTPS_PROXY: proxyUrl,
    http_proxy: proxyUrl,
    https_proxy: proxyUrl,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    // Node's own fetch and http honour the variables above only when asked (Node ≥ 24.5).
    NODE_USE_ENV_PROXY: "1",
  };
}
