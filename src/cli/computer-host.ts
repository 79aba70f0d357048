/**
 * `roost computer-host`: a node that runs computers and nothing else (decision 0041,
 * docs/operations.md "Computer hosts"): the store, the computer provider, the egress proxy, the
 * gateway its workers dial, the node endpoint other nodes forward calls through, and its host
 * service registered with Restate. No public API, no web app, no loops. API nodes beside it run
 * with ROOST_COMPUTERS=remote and list it in ROOST_COMPUTER_HOSTS.
 */
import type { Command } from "./args.ts";
import { options, up } from "./up.ts";

export const computerHostCommand: Command = {
  spec: {
    name: "computer-host",
    summary: "Run computers for the API nodes of a scale-out (no API, no web app, no loops).",
    synopsis: "[options]",
    description: [
      "Takes `roost up`'s options. Needs the shared Postgres and the external Restate of the API",
      "nodes, ROOST_NODE_ID (listed in the API nodes' ROOST_COMPUTER_HOSTS), ROOST_NODE_URL and",
      "ROOST_NODE_SECRET (node-to-node forwarding), and ROOST_NODE_SERVICE_URL where Restate reaches",
      "this host's service port. Its port answers the gateway and /v1/health only.",
    ].join("\n"),
    options,
    positionals: { min: 0, max: 0, names: "" },
    examples: [
      "ROOST_NODE_ID=host-1 ROOST_NODE_URL=http://10.0.0.8:7792 ROOST_NODE_SECRET=… roost computer-host",
    ],
  },
  run: (args, io) => up(args.values, io, "computer-host"),
};
