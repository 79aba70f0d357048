/** The HTTP API's wire types, shared with the server and the CLI (src/protocol/api.ts). */
export type * from "../../../src/protocol/api.ts";
