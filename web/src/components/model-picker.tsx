/**
 * The bot form's model picker (docs/models.md "From the web app"): "Platform default (…)" once,
 * each configured provider's models (from its models endpoint, or Roost's curated list), the
 * demo model labelled as such when it is not the default already, and any other spec typed in.
 */
import { useEffect, useId, useState } from "react";
import { ApiError } from "../api/client.ts";
import { settingsClient } from "../api/settings-client.ts";
import type { ModelChoices } from "../api/types.ts";
import { onLinkClick, paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
import "./settings.css";

const otherValue = "\u0000other";
const defaultValue = "\u0000default";
const demoSpec = "demo";

const providerNames: Record<string, string> = {
  openai: "OpenAI",
  anthropic: "Anthropic",
  xai: "xAI",
  "openai-compatible": "OpenAI-compatible server",
};

/**
 * An API error about the model, in the web app's terms: the API names the environment variable
 * (`details.provider`, models/ G2); a web user is pointed at Settings → Models.
 */
export function modelErrorText(error: unknown): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  const provider = error.details?.provider;
  if (typeof provider !== "string") return undefined;
  const name = providerNames[provider] ?? provider;
  return provider === "openai-compatible"
    ? `No ${name} is configured for this model. An admin can add one in Settings → Models.`
    : `No ${name} key is configured. An admin can add one in Settings → Models.`;
}

export function ModelPicker({
  value,
  onChange,
  describedBy,
}: {
  /** The bot's model: null for the platform default. */
  value: string | null;
  onChange(model: string | null): void;
  describedBy?: string | undefined;
}) {
  const { api, me } = useSession();
  const id = useId();
  const [choices, setChoices] = useState<ModelChoices>();
  const [loadError, setLoadError] = useState<string>();
  const [typing, setTyping] = useState(false);

  useEffect(() => {
    const controller = new AbortController();
    settingsClient(api)
      .modelChoices(controller.signal)
      .then((loaded) => {
        setChoices(loaded);
        setLoadError(undefined);
      })
      .catch((error: unknown) => {
        if (!controller.signal.aborted)
          setLoadError(error instanceof Error ? error.message : String(error));
      });
    return () => controller.abort();
  }, [api]);

  // The demo model is offered apart only when it is not the default; a bot that names it anyway
  // (made through the API) still shows it as the demo model, not as a typed-in spec.
  const demo =
    choices?.demo ??
    (value === demoSpec
      ? { spec: demoSpec, label: "Demo model (offline, canned answers, no provider)" }
      : null);
  const offered = (() => {
    const specs = new Set<string>();
    if (demo !== null) specs.add(demo.spec);
    for (const group of choices?.groups ?? [])
      for (const model of group.models) specs.add(model.spec);
    return specs;
  })();

  const isDefault = value === null;
  const isOther = typing || (value !== null && choices !== undefined && !offered.has(value));
  const selected = isDefault && !typing ? defaultValue : isOther ? otherValue : (value ?? "");
  const platformDefault = choices?.platformDefault ?? {
    label: me.defaultModel.isDemo
      ? "Platform default (demo model, offline)"
      : `Platform default (${me.defaultModel.id})`,
    spec: me.defaultModel.id,
    isDemo: me.defaultModel.isDemo,
  };
  const willBeDemo = value === demoSpec || (value === null && !typing && platformDefault.isDemo);
  const problems = (choices?.groups ?? []).filter((group) => group.problem !== undefined);
  const noProviders = choices !== undefined && choices.groups.length === 0;

  return (
    <div className="model-picker">
      <div className="field">
        <label htmlFor={`${id}-select`}>Model</label>
        <select
          id={`${id}-select`}
          name="model"
          value={selected}
          aria-describedby={[`${id}-help`, describedBy].filter(Boolean).join(" ")}
          onChange={(event) => {
            const next = event.target.value;
            if (next === otherValue) {
              setTyping(true);
              if (value === null || offered.has(value)) onChange("");
              return;
            }
            setTyping(false);
            onChange(next === defaultValue ? null : next);
          }}
        >
          <option value={defaultValue}>{platformDefault.label}</option>
          {demo !== null && <option value={demo.spec}>{demo.label}</option>}
          {choices?.groups.map((group) => (
            <optgroup
              key={group.providerId}
              label={group.listedBy === "curated" ? `${group.label} (usual models)` : group.label}
            >
              {group.models.map((model) => (
                <option key={model.spec} value={model.spec}>
                  {model.label === model.spec ? model.spec : `${model.label} — ${model.spec}`}
                </option>
              ))}
            </optgroup>
          ))}
          <option value={otherValue}>Another model (type provider:model)…</option>
        </select>
      </div>
      {isOther && (
        <input
          name="model-spec"
          aria-label="Model, as provider:model"
          value={value ?? ""}
          onChange={(event) => onChange(event.target.value)}
          placeholder="provider:model, e.g. openai:gpt-4.1-mini"
          aria-describedby={describedBy}
          required
        />
      )}
      <div id={`${id}-help`}>
        {willBeDemo && (
          <p className="notice notice-info">
            The demo model runs offline and needs no provider: it repeats what you say, and a
            message starting with <code>$ </code> runs that command on your computer.
            {noProviders &&
              (me.isAdmin ? (
                <>
                  {" "}
                  For a real model, add a provider in{" "}
                  <a
                    href={paths.settings("models")}
                    onClick={(event) => onLinkClick(event, paths.settings("models"))}
                  >
                    Settings → Models
                  </a>
                  .
                </>
              ) : (
                " For a real model, ask an admin to add a provider in Settings → Models."
              ))}
          </p>
        )}
        {loadError !== undefined && (
          <p className="notice notice-warn">Could not load the model list: {loadError}</p>
        )}
        {problems.map((group) => (
          <p key={group.providerId} className="muted field-help">
            {group.label}: {group.problem}
            {group.listedBy === "curated" && group.models.length > 0
              ? " (showing the usual models)"
              : ""}
          </p>
        ))}
      </div>
    </div>
  );
}
