/**
 * The demo model's commands for helpers (issue 15 §1, docs/helpers.md), kept apart from demo.ts:
 *
 *   `helper <task>`                 → tool `start_helper` `{ task }`
 *   `helpers <task> | <task> …`     → one `start_helper` per task, in one model call (parallel)
 *   `check helper <id>`             → tool `check_helper` `{ id }`
 *   `message helper <id>: <text>`   → tool `message_helper` `{ id, text }`
 *   `stop helper <id>`              → tool `stop_helper` `{ id }`
 *
 * A helper's task arrives with a first line saying so (loop/context.ts HIS4); `helperTaskText`
 * gives the task after it, so the helper's demo model reads the task's own commands
 * (`helper $ ls` runs `ls` in the helper).
 */

export interface DemoToolCall {
  name: string;
  input: Record<string, unknown>;
}

/** The task after a helper task's first line; undefined for other messages. */
export function helperTaskText(text: string): string | undefined {
  const match = /^\[Task for helper [^\]\n]*\]\n([\s\S]*)$/.exec(text);
  return match?.[1];
}

/** The calls of one of the commands above, when their tool is offered (D2); undefined otherwise. */
export function decideHelperCommand(
  text: string,
  isOffered: (tool: string) => boolean,
): DemoToolCall[] | undefined {
  const many = /^helpers\s+([\s\S]+)$/i.exec(text);
  if (many?.[1] !== undefined && isOffered("start_helper")) {
    const tasks = many[1]
      .split("|")
      .map((task) => task.trim())
      .filter((task) => task !== "");
    if (tasks.length > 0) return tasks.map((task) => ({ name: "start_helper", input: { task } }));
  }
  const one = /^helper\s+([\s\S]+)$/i.exec(text);
  if (one?.[1] !== undefined && isOffered("start_helper"))
    return [{ name: "start_helper", input: { task: one[1].trim() } }];
  const check = /^check\s+helper\s+(\S+)\s*$/i.exec(text);
  if (check?.[1] !== undefined && isOffered("check_helper"))
    return [{ name: "check_helper", input: { id: check[1] } }];
  const message = /^message\s+helper\s+(\S+?)\s*:\s*([\s\S]+)$/i.exec(text);
  if (message?.[1] !== undefined && message[2] !== undefined && isOffered("message_helper"))
    return [{ name: "message_helper", input: { id: message[1], text: message[2].trim() } }];
  const stop = /^stop\s+helper\s+(\S+)\s*$/i.exec(text);
  if (stop?.[1] !== undefined && isOffered("stop_helper"))
    return [{ name: "stop_helper", input: { id: stop[1] } }];
  return undefined;
}
