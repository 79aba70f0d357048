/** Test support for loop/: a durable context without an engine. Never imported by production code. */
export { createMemoryDurable, type MemoryDurable } from "./memory-durable.ts";
