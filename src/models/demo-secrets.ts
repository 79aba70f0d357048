/**
 * The demo model's command for secrets (issue 12 §2, docs/secrets.md), kept apart from demo.ts's:
 *
 *   `request secret <NAME> [<reason>]` → tool `request_secret` `{ name, reason }`
 *                                        (default reason "the owner asked to try it")
 *
 * The other tools exercise secrets as they are: `$ echo $NAME` shows `[REDACTED]` (the value is in
 * the shell's environment, the result is redacted), `$ echo $NAME | base64` too, and
 * `write <path> [REDACTED]` over a file holding the value is refused (CT9).
 */
import type { DemoToolAction } from "./demo-results.ts";

/** The command above, when `request_secret` is offered (D2); undefined otherwise. */
export function decideSecretCommand(
  text: string,
  isOffered: (tool: string) => boolean,
): DemoToolAction | undefined {
  const request = /^request\s+secret\s+(\S+)(?:\s+([\s\S]+))?$/i.exec(text.trim());
  if (request?.[1] === undefined || !isOffered("request_secret")) return undefined;
  return {
    kind: "tool",
    name: "request_secret",
    input: { name: request[1], reason: request[2]?.trim() || "the owner asked to try it" },
  };
}
