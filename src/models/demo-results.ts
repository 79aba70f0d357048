/**
 * The demo model's commands for results (issue 11 §2–§3), kept apart from demo.ts's own:
 *
 *   `tell <bot>: <text>`                        → tool `message_bot` `{ to, text }`
 *   `draft email <to> [/ <subject>]: <text>`    → tool `draft` `{ kind: "email", to, subject, text }`
 *   `draft slack <channel>: <text>`             → tool `draft` `{ kind: "slack", to, text }`
 *   `draft message <person>: <text>`            → tool `draft` `{ kind: "message", to, text }`
 *   `no reply [<reason>]`                       → tool `no_reply` `{ reason }` (default "nothing to add")
 *
 * A message another bot (or a routine) sent starts with a line in brackets saying where it came
 * from (loop/context.ts HIS4); the commands are read after it, so a chain such as
 * `tell b: tell a: hi` travels from bot to bot one command per hop.
 */

export type DemoToolAction = { kind: "tool"; name: string; input: Record<string, string> };

/** The text after a leading `[Message from …]` line, if any. */
export function withoutSourceLine(text: string): string {
  return text.replace(/^\[[^\]\n]*\]\n/, "").trim();
}

/** One of the commands above, when its tool is offered (D2); undefined otherwise. */
export function decideResultCommand(
  text: string,
  isOffered: (tool: string) => boolean,
): DemoToolAction | undefined {
  const command = withoutSourceLine(text);
  const tell = /^tell\s+([^:\n]+?)\s*:\s*([\s\S]+)$/i.exec(command);
  if (tell?.[1] !== undefined && tell[2] !== undefined && isOffered("message_bot"))
    return { kind: "tool", name: "message_bot", input: { to: tell[1], text: tell[2].trim() } };
  const draft =
    /^draft\s+(email|slack|message)\s+([^:\n]+?)(?:\s+\/\s+([^:\n]+?))?\s*:\s*([\s\S]+)$/i.exec(
      command,
    );
  if (
    draft?.[1] !== undefined &&
    draft[2] !== undefined &&
    draft[4] !== undefined &&
    isOffered("draft")
  )
    return {
      kind: "tool",
      name: "draft",
      input: {
        kind: draft[1].toLowerCase(),
        to: draft[2],
        ...(draft[3] === undefined ? {} : { subject: draft[3] }),
        text: draft[4].trim(),
      },
    };
  const noReply = /^no[ _-]reply(?:\s+([\s\S]+))?$/i.exec(command);
  if (noReply !== null && isOffered("no_reply"))
    return {
      kind: "tool",
      name: "no_reply",
      input: { reason: noReply[1]?.trim() || "nothing to add" },
    };
  return undefined;
}
