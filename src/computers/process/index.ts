export { createProcessProvider, type ProcessProviderOptions } from "./process-provider.ts";
