/** Create or edit a bot: name, instructions and model, with the demo model labelled as such. */
import { ArrowLeft, Save } from "lucide-react";
import { useEffect, useId, useState, type FormEvent } from "react";
import { ApiError } from "../api/client.ts";
import type { Bot, SkillSummary, Team } from "../api/types.ts";
import { navigate, onLinkClick, paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
import { McpServersSection } from "./mcp-servers.tsx";
import { ModelPicker, modelErrorText } from "./model-picker.tsx";
import { SlackSection } from "./slack-settings.tsx";
import { RoutinesSection } from "./routines.tsx";
import { EmptyState, Header } from "./ui.tsx";

export function BotForm(
  props: { mode: "create" } | { mode: "edit"; botId: string; onMenu(): void },
) {
  const { api, bots, upsertBot } = useSession();
  const editing = props.mode === "edit" ? bots?.find((bot) => bot.id === props.botId) : undefined;
  const [loaded, setLoaded] = useState<Bot | undefined>(editing);
  const [loadError, setLoadError] = useState<string>();
  const botId = props.mode === "edit" ? props.botId : undefined;

  useEffect(() => {
    if (botId === undefined || loaded !== undefined) return;
    api
      .getBot(botId)
      .then(setLoaded)
      .catch((error: unknown) =>
        setLoadError(error instanceof Error ? error.message : String(error)),
      );
  }, [api, botId, loaded]);

  if (props.mode === "edit") {
    const title = loaded === undefined ? "Edit bot" : `Edit ${loaded.name}`;
    return (
      <>
        <Header title={title} onMenu={props.onMenu} />
        <div className="page">
          {loaded === undefined ? (
            <EmptyState
              title={loadError === undefined ? "Loading…" : "Could not load this bot"}
              detail={loadError}
            />
          ) : (
            <>
              <BotFields key={loaded.id} bot={loaded} onSaved={upsertBot} api={api} />
              <RoutinesSection botId={loaded.id} />
              <McpServersSection botId={loaded.id} />
              {loaded.own !== false && <SlackSection botId={loaded.id} />}
            </>
          )}
        </div>
      </>
    );
  }
  return <BotFields bot={undefined} onSaved={upsertBot} api={api} />;
}

function BotFields({
  bot,
  onSaved,
  api,
}: {
  bot: Bot | undefined;
  onSaved(bot: Bot): void;
  api: ReturnType<typeof useSession>["api"];
}) {
  const id = useId();
  const [name, setName] = useState(bot?.name ?? "");
  const [instructions, setInstructions] = useState(bot?.instructions ?? "");
  const [modelValue, setModelValue] = useState<string | null>(bot?.model ?? null);
  const [memoryReview, setMemoryReview] = useState(bot?.memoryReview ?? false);
  const [notify, setNotify] = useState(bot?.notify ?? false);
  const [browserRecording, setBrowserRecording] = useState(bot?.browserRecording ?? false);
  const [skills, setSkills] = useState<string[] | null>(bot?.skills ?? null);
  const [teamId, setTeamId] = useState<string | null>(bot?.teamId ?? null);
  const [teams, setTeams] = useState<Team[]>([]);
  useEffect(() => {
    const controller = new AbortController();
    api
      .listTeams(controller.signal)
      .then((list) =>
        setTeams(list.filter((team) => team.role === "owner" || team.role === "admin")),
      )
      .catch(() => setTeams([]));
    return () => controller.abort();
  }, [api]);
  const [error, setError] = useState<ApiError | Error>();
  const [busy, setBusy] = useState(false);

  const model = modelValue === null ? null : modelValue.trim();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      let saved: Bot;
      if (bot === undefined) {
        saved = await api.createBot({
          name: name.trim(),
          instructions,
          model,
          memoryReview,
          skills,
          notify,
          ...(teamId === null ? {} : { teamId }),
          browserRecording,
        });
      } else {
        const patch: Parameters<typeof api.updateBot>[1] = {};
        if (name.trim() !== bot.name) patch.name = name.trim();
        if (instructions !== bot.instructions) patch.instructions = instructions;
        if (model !== bot.model) patch.model = model;
        if (memoryReview !== bot.memoryReview) patch.memoryReview = memoryReview;
        if (notify !== bot.notify) patch.notify = notify;
        if (browserRecording !== bot.browserRecording) patch.browserRecording = browserRecording;
        if (!sameSkills(skills, bot.skills)) patch.skills = skills;
        if (teamId !== bot.teamId) patch.teamId = teamId;
        saved = Object.keys(patch).length === 0 ? bot : await api.updateBot(bot.id, patch);
      }
      onSaved(saved);
      navigate(paths.bot(saved.id));
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
    } finally {
      setBusy(false);
    }
  };

  const errorFor = (field: string) =>
    error instanceof ApiError && error.message.toLowerCase().includes(field)
      ? `${id}-error`
      : undefined;

  return (
    <form
      className="form"
      onSubmit={(event) => void submit(event)}
      aria-label={bot === undefined ? "Create a bot" : `Edit ${bot.name}`}
    >
      <label className="field">
        <span>Name</span>
        <input
          name="name"
          value={name}
          onChange={(event) => setName(event.target.value)}
          maxLength={80}
          required
          placeholder="e.g. Research helper"
          aria-describedby={errorFor("name")}
          autoFocus={bot === undefined}
        />
      </label>
      <label className="field">
        <span>Instructions</span>
        <textarea
          name="instructions"
          value={instructions}
          onChange={(event) => setInstructions(event.target.value)}
          rows={6}
          maxLength={20_000}
          placeholder="What this bot is for and how it should work. For example: “You keep my notes in /workspace/notes and answer briefly.”"
        />
      </label>
      <ModelPicker value={modelValue} onChange={setModelValue} describedBy={errorFor("model")} />
      <fieldset className="field">
        <legend>Memory</legend>
        <label className="choice">
          <input
            type="checkbox"
            name="memoryReview"
            checked={memoryReview}
            onChange={(event) => setMemoryReview(event.target.checked)}
            aria-describedby={`${id}-memory-help`}
          />
          <span>Review memory changes before they are saved</span>
        </label>
        <p className="muted field-help" id={`${id}-memory-help`}>
          The memory pass after each turn then only proposes: its changes wait in the bot’s memory
          inbox for you to accept or reject.
        </p>
      </fieldset>
      <fieldset className="field">
        <legend>Notifications</legend>
        <label className="choice">
          <input
            type="checkbox"
            name="notify"
            checked={notify}
            onChange={(event) => setNotify(event.target.checked)}
            aria-describedby={`${id}-notify-help`}
          />
          <span>Notify me when this bot finishes or needs input</span>
        </label>
        <p className="muted field-help" id={`${id}-notify-help`}>
          You are told when a turn ends with a reply, stops with an error, or leaves a draft for
          you: in the sidebar, as a browser notification once you turn those on, and at your
          notifications webhook if you set one (docs/results.md).
        </p>
      </fieldset>
      <fieldset className="field">
        <legend>Browser</legend>
        <label className="choice">
          <input
            type="checkbox"
            name="browserRecording"
            checked={browserRecording}
            onChange={(event) => setBrowserRecording(event.target.checked)}
            aria-describedby={`${id}-recording-help`}
          />
          <span>Record this bot’s browser tasks</span>
        </label>
        <p className="muted field-help" id={`${id}-recording-help`}>
          A few frames per second of each browser step are kept with the turn, as an attachment you
          can play back in the chat (docs/web-tools.md).
        </p>
      </fieldset>
      <SkillsLimit value={skills} onChange={setSkills} api={api} />
      {(teams.length > 0 || teamId !== null) && (
        <label className="field">
          <span>Share with a team</span>
          <select
            name="teamId"
            value={teamId ?? ""}
            onChange={(event) => setTeamId(event.target.value === "" ? null : event.target.value)}
          >
            <option value="">Not shared</option>
            {teams.map((team) => (
              <option key={team.id} value={team.id}>
                {team.name}
              </option>
            ))}
            {teamId !== null && !teams.some((team) => team.id === teamId) && (
              <option value={teamId}>{teamId}</option>
            )}
          </select>
          <span className="muted field-help">
            Members talk to it on their own computers with their own secrets; only you change it
            (docs/teams.md).
          </span>
        </label>
      )}
      {error !== undefined && (
        <p className="notice notice-error" role="alert" id={`${id}-error`}>
          {modelErrorText(error) ?? error.message}
        </p>
      )}
      <div className="form-actions">
        <button
          className="button button-primary"
          type="submit"
          disabled={busy || name.trim() === ""}
        >
          <Save size={16} aria-hidden="true" />{" "}
          {busy ? "Saving…" : bot === undefined ? "Create bot" : "Save changes"}
        </button>
        {bot !== undefined && (
          <a
            className="button"
            href={paths.bot(bot.id)}
            onClick={(event) => onLinkClick(event, paths.bot(bot.id))}
          >
            <ArrowLeft size={16} aria-hidden="true" /> Back to chat
          </a>
        )}
      </div>
    </form>
  );
}

function sameSkills(a: string[] | null, b: string[] | null): boolean {
  if (a === null || b === null) return a === b;
  return a.length === b.length && [...a].sort().join("\n") === [...b].sort().join("\n");
}

/** Which of the account's skills the bot may use: all of them (null), or the ones ticked. */
function SkillsLimit({
  value,
  onChange,
  api,
}: {
  value: string[] | null;
  onChange(value: string[] | null): void;
  api: ReturnType<typeof useSession>["api"];
}) {
  const [available, setAvailable] = useState<SkillSummary[]>();
  const [loadError, setLoadError] = useState<string>();
  useEffect(() => {
    const controller = new AbortController();
    api
      .listSkills(controller.signal)
      .then((list) => setAvailable(list.skills))
      .catch((caught: unknown) => {
        if (!controller.signal.aborted)
          setLoadError(caught instanceof Error ? caught.message : String(caught));
      });
    return () => controller.abort();
  }, [api]);
  // Names the bot is limited to that no longer exist are kept (they match nothing) and shown.
  const names = [
    ...new Set([...(available ?? []).map((skill) => skill.name), ...(value ?? [])]),
  ].sort();
  const descriptionOf = (name: string) =>
    available?.find((skill) => skill.name === name)?.description ?? "(deleted)";
  return (
    <fieldset className="field">
      <legend>Skills</legend>
      <div className="choices" role="radiogroup">
        <label className="choice">
          <input
            type="radio"
            name="skills-limit"
            value="all"
            checked={value === null}
            onChange={() => onChange(null)}
          />
          <span>All of your skills{available !== undefined && ` (${available.length})`}</span>
        </label>
        <label className="choice">
          <input
            type="radio"
            name="skills-limit"
            value="some"
            checked={value !== null}
            onChange={() => onChange(value ?? [])}
          />
          <span>Only the ones ticked below</span>
        </label>
      </div>
      {value !== null && (
        <div className="choices" role="group" aria-label="Skills this bot may use">
          {names.length === 0 && (
            <p className="muted">
              You have no skills yet: add them on the{" "}
              <a href={paths.skills} onClick={(event) => onLinkClick(event, paths.skills)}>
                Skills page
              </a>
              . Until you tick some, this bot uses none.
            </p>
          )}
          {names.map((name) => (
            <label className="choice" key={name}>
              <input
                type="checkbox"
                name="skill"
                value={name}
                checked={value.includes(name)}
                onChange={(event) =>
                  onChange(
                    event.target.checked
                      ? [...value, name]
                      : value.filter((candidate) => candidate !== name),
                  )
                }
              />
              <span>
                <code>{name}</code> <span className="muted">{descriptionOf(name)}</span>
              </span>
            </label>
          ))}
        </div>
      )}
      {loadError !== undefined && (
        <p className="notice notice-error">Could not load your skills: {loadError}</p>
      )}
    </fieldset>
  );
}
