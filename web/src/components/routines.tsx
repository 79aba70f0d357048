/**
 * A bot's routines on its page (docs/routines.md): the list with enable/disable, run now and the
 * last runs; a form that makes one from a preset schedule or a webhook; the webhook's URL and key
 * shown once; and the resume button while the owner's absence paused them.
 */
import { useCallback, useEffect, useState, type FormEvent } from "react";
import type { Routine, RoutineRun, RoutineTrigger, SchedulePreset, Weekday } from "../api/types.ts";
import { paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";

type Api = ReturnType<typeof useSession>["api"];
type Choice = SchedulePreset | "webhook";

async function call<T>(api: Api, method: string, path: string, json?: unknown): Promise<T> {
  const response = await api.send(method, path, json === undefined ? {} : { json });
  return (response.status === 204 ? undefined : await response.json()) as T;
}

const presetLabels: Record<Choice, string> = {
  hourly: "Every hour",
  daily: "Every day at",
  weekdays: "Weekdays at",
  weekly: "Every week on",
  monthly: "Every month on day",
  webhook: "When a webhook is called",
};

export function describeTrigger(trigger: RoutineTrigger): string {
  if (trigger.type === "webhook") return "Webhook";
  if (trigger.type === "slack")
    return trigger.phrase === undefined ? "Slack: new messages" : `Slack: “${trigger.phrase}”`;
  if ("cron" in trigger) return `cron ${trigger.cron}`;
  if ("everyMs" in trigger) return `every ${Math.round(trigger.everyMs / 60_000)} min`;
  const at = trigger.at ?? "09:00";
  switch (trigger.preset) {
    case "hourly":
      return `hourly at :${String(trigger.minute ?? 0).padStart(2, "0")}`;
    case "daily":
      return `daily at ${at}`;
    case "weekdays":
      return `weekdays at ${at}`;
    case "weekly":
      return `${trigger.day ?? "mon"} at ${at}`;
    case "monthly":
      return `day ${trigger.dayOfMonth ?? 1} at ${at}`;
  }
}

function triggerOf(choice: Choice, at: string, day: Weekday, dayOfMonth: number): RoutineTrigger {
  switch (choice) {
    case "webhook":
      return { type: "webhook" };
    case "hourly":
      return { type: "schedule", preset: "hourly" };
    case "weekly":
      return { type: "schedule", preset: "weekly", at, day };
    case "monthly":
      return { type: "schedule", preset: "monthly", at, dayOfMonth };
    default:
      return { type: "schedule", preset: choice, at };
  }
}

export function RoutinesSection({ botId }: { botId: string }) {
  const { api } = useSession();
  const [routines, setRoutines] = useState<Routine[]>();
  const [error, setError] = useState<string>();
  const [shownKey, setShownKey] = useState<{ routineId: string; url: string; key: string }>();
  const [openRuns, setOpenRuns] = useState<string>();

  const reload = useCallback(async () => {
    try {
      const list = await call<{ routines: Routine[] }>(
        api,
        "GET",
        `/v1/bots/${encodeURIComponent(botId)}/routines`,
      );
      setRoutines(list.routines);
      setError(undefined);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  }, [api, botId]);
  useEffect(() => void reload(), [reload]);

  const act = async (work: () => Promise<void>) => {
    try {
      await work();
      await reload();
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  };
  const showKey = (routine: Routine) => {
    if (routine.webhook?.key != null)
      setShownKey({ routineId: routine.id, url: routine.webhook.url, key: routine.webhook.key });
  };
  const paused = routines?.some((routine) => routine.paused) === true;

  return (
    <section className="routines" aria-label="Routines">
      <h2>Routines</h2>
      <p className="muted">
        Work this bot starts on its own: on a schedule, or when another service calls its webhook.
      </p>
      {paused && (
        <p className="notice" role="status">
          Your scheduled routines are paused because you were away.{" "}
          <button
            className="button button-small"
            type="button"
            onClick={() =>
              void act(async () => void (await call(api, "POST", "/v1/routines/resume")))
            }
          >
            Resume routines
          </button>
        </p>
      )}
      {error !== undefined && (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      )}
      {shownKey !== undefined && (
        <div className="notice" role="status" aria-label="Webhook key">
          <p>
            Webhook URL: <code>{shownKey.url}</code>
          </p>
          <p>
            Key (shown once — copy it now): <code>{shownKey.key}</code>
          </p>
          <button
            className="button button-small"
            type="button"
            onClick={() => setShownKey(undefined)}
          >
            I saved it
          </button>
        </div>
      )}
      {routines !== undefined && routines.length === 0 && <p className="muted">No routines yet.</p>}
      <ul className="routine-list">
        {routines?.map((routine) => (
          <li key={routine.id} className="routine">
            <div className="routine-head">
              <strong>{routine.name}</strong>{" "}
              <span className="muted">
                {describeTrigger(routine.trigger)}
                {routine.timezone !== null && ` (${routine.timezone})`}
                {routine.nextRunAt !== null &&
                  ` · next ${new Date(routine.nextRunAt).toLocaleString()}`}
              </span>
            </div>
            <div className="routine-actions">
              <label className="choice">
                <input
                  type="checkbox"
                  checked={routine.enabled}
                  aria-label={`${routine.name} enabled`}
                  onChange={(event) =>
                    void act(
                      async () =>
                        void (await call(api, "PATCH", `/v1/routines/${routine.id}`, {
                          enabled: event.target.checked,
                        })),
                    )
                  }
                />
                <span>Enabled</span>
              </label>
              <button
                className="button button-small"
                type="button"
                onClick={() =>
                  void act(
                    async () => void (await call(api, "POST", `/v1/routines/${routine.id}/run`)),
                  )
                }
              >
                Run now
              </button>
              <button
                className="button button-small"
                type="button"
                onClick={() => setOpenRuns(openRuns === routine.id ? undefined : routine.id)}
              >
                Runs
              </button>
              {routine.webhook !== null && (
                <button
                  className="button button-small"
                  type="button"
                  onClick={() =>
                    void act(async () =>
                      showKey(
                        await call<Routine>(
                          api,
                          "POST",
                          `/v1/routines/${routine.id}/webhook/rotate`,
                        ),
                      ),
                    )
                  }
                >
                  New webhook key
                </button>
              )}
              <button
                className="button button-small"
                type="button"
                onClick={() =>
                  void act(
                    async () => void (await call(api, "DELETE", `/v1/routines/${routine.id}`)),
                  )
                }
              >
                Delete
              </button>
            </div>
            {routine.webhook !== null && (
              <p className="muted">
                Webhook: <code>{routine.webhook.url}</code>
              </p>
            )}
            {openRuns === routine.id && <RunList api={api} routineId={routine.id} />}
          </li>
        ))}
      </ul>
      <NewRoutine
        api={api}
        botId={botId}
        onCreated={(routine) => {
          showKey(routine);
          void reload();
        }}
      />
    </section>
  );
}

function RunList({ api, routineId }: { api: Api; routineId: string }) {
  const [runs, setRuns] = useState<RoutineRun[]>();
  useEffect(() => {
    void call<{ runs: RoutineRun[] }>(api, "GET", `/v1/routines/${routineId}/runs`).then((list) =>
      setRuns(list.runs),
    );
  }, [api, routineId]);
  if (runs === undefined) return <p className="muted">Loading runs…</p>;
  if (runs.length === 0) return <p className="muted">No runs yet.</p>;
  return (
    <table className="routine-runs">
      <thead>
        <tr>
          <th>Status</th>
          <th>Why</th>
          <th>Started</th>
          <th>Finished</th>
          <th>Cost</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((run) => (
          <tr key={run.id}>
            <td>
              {run.conversationId === null ? (
                run.status
              ) : (
                <a href={paths.conversation(run.conversationId)}>{run.status}</a>
              )}
            </td>
            <td>{run.kind}</td>
            <td>
              {run.startedAt === null
                ? run.scheduledAt === null
                  ? "—"
                  : `due ${new Date(run.scheduledAt).toLocaleString()}`
                : new Date(run.startedAt).toLocaleString()}
            </td>
            <td>{run.finishedAt === null ? "—" : new Date(run.finishedAt).toLocaleString()}</td>
            <td>
              {run.cost !== null
                ? run.cost.toFixed(4)
                : run.tokens !== null
                  ? `${run.tokens} tokens`
                  : "—"}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function NewRoutine({
  api,
  botId,
  onCreated,
}: {
  api: Api;
  botId: string;
  onCreated(routine: Routine): void;
}) {
  const [name, setName] = useState("");
  const [instruction, setInstruction] = useState("");
  const [choice, setChoice] = useState<Choice>("daily");
  const [at, setAt] = useState("09:00");
  const [day, setDay] = useState<Weekday>("mon");
  const [dayOfMonth, setDayOfMonth] = useState(1);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    try {
      const routine = await call<Routine>(
        api,
        "POST",
        `/v1/bots/${encodeURIComponent(botId)}/routines`,
        {
          name,
          instruction,
          trigger: triggerOf(choice, at, day, dayOfMonth),
        },
      );
      setName("");
      setInstruction("");
      setError(undefined);
      onCreated(routine);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      className="routine-form"
      onSubmit={(event) => void submit(event)}
      aria-label="New routine"
    >
      <h3>New routine</h3>
      <label className="field">
        <span>Name</span>
        <input
          name="routine-name"
          value={name}
          required
          maxLength={80}
          onChange={(event) => setName(event.target.value)}
        />
      </label>
      <label className="field">
        <span>Instruction</span>
        <textarea
          name="routine-instruction"
          value={instruction}
          required
          rows={3}
          maxLength={20_000}
          placeholder="What the bot should do each time, e.g. “Summarise my unread mail.”"
          onChange={(event) => setInstruction(event.target.value)}
        />
      </label>
      <label className="field">
        <span>When</span>
        <select
          name="routine-when"
          value={choice}
          onChange={(event) => setChoice(event.target.value as Choice)}
        >
          {(Object.keys(presetLabels) as Choice[]).map((key) => (
            <option key={key} value={key}>
              {presetLabels[key]}
            </option>
          ))}
        </select>
      </label>
      {choice === "weekly" && (
        <label className="field">
          <span>Day</span>
          <select
            name="routine-day"
            value={day}
            onChange={(event) => setDay(event.target.value as Weekday)}
          >
            {(["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as Weekday[]).map((value) => (
              <option key={value} value={value}>
                {value}
              </option>
            ))}
          </select>
        </label>
      )}
      {choice === "monthly" && (
        <label className="field">
          <span>Day of the month</span>
          <input
            name="routine-day-of-month"
            type="number"
            min={1}
            max={28}
            value={dayOfMonth}
            onChange={(event) => setDayOfMonth(Number(event.target.value))}
          />
        </label>
      )}
      {choice !== "hourly" && choice !== "webhook" && (
        <label className="field">
          <span>Time</span>
          <input
            name="routine-at"
            type="time"
            value={at}
            onChange={(event) => setAt(event.target.value)}
          />
        </label>
      )}
      {error !== undefined && (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      )}
      <button className="button button-primary" type="submit" disabled={busy}>
        Add routine
      </button>
    </form>
  );
}
