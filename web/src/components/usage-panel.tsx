/**
 * A bot's Usage panel (docs/usage.md): tokens and cost today and this month, the turns parked at
 * its budget, and the budget form. Saving sends the whole budget (an empty field is no limit);
 * the server checks it and says what to fix, and parked turns go on at once when it allows them.
 */
import { Gauge, Save } from "lucide-react";
import { useEffect, useId, useState } from "react";
import type { Bot, BotBudgetView, Budget, UsageAmount } from "../api/types.ts";
import { onLinkClick, paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
import { BotNotFound, EditBotLink, EmptyState, Header } from "./ui.tsx";

/** The header's way to a bot's Usage panel. */
export function UsageLink({ bot }: { bot: Bot }) {
  const href = paths.botUsage(bot.id);
  return (
    <a
      className="icon-button"
      href={href}
      onClick={(event) => onLinkClick(event, href)}
      aria-label={`Usage and budget of ${bot.name}`}
      title={`Usage and budget of ${bot.name}`}
    >
      <Gauge size={18} aria-hidden="true" />
    </a>
  );
}

const limits: { key: keyof Budget; label: string; unit: "tokens" | "cost" }[] = [
  { key: "tokensPerDay", label: "Tokens per day", unit: "tokens" },
  { key: "tokensPerMonth", label: "Tokens per month", unit: "tokens" },
  { key: "costPerDay", label: "Cost per day", unit: "cost" },
  { key: "costPerMonth", label: "Cost per month", unit: "cost" },
];

type Fields = Record<keyof Budget, string>;

const fieldsOf = (budget: Budget): Fields => ({
  tokensPerDay: budget.tokensPerDay?.toString() ?? "",
  tokensPerMonth: budget.tokensPerMonth?.toString() ?? "",
  costPerDay: budget.costPerDay?.toString() ?? "",
  costPerMonth: budget.costPerMonth?.toString() ?? "",
});

export function formatCost(cost: number | null, currency: string): string {
  if (cost === null) return "unknown (no price for this model)";
  return `${cost < 0.01 && cost > 0 ? cost.toFixed(4) : cost.toFixed(2)} ${currency}`;
}

function Amount({
  title,
  amount,
  currency,
}: {
  title: string;
  amount: UsageAmount;
  currency: string;
}) {
  return (
    <section className="usage-amount" aria-label={title}>
      <h3>{title}</h3>
      <p className="usage-tokens">{amount.tokens.toLocaleString()} tokens</p>
      <p className="muted">
        {amount.inputTokens.toLocaleString()} in · {amount.outputTokens.toLocaleString()} out ·{" "}
        {amount.calls.toLocaleString()} model {amount.calls === 1 ? "call" : "calls"}
      </p>
      <p className="usage-cost">{formatCost(amount.cost, currency)}</p>
      {amount.unpricedCalls > 0 && amount.cost !== null && (
        <p className="muted">
          {amount.unpricedCalls} {amount.unpricedCalls === 1 ? "call" : "calls"} without a price are
          not in the cost.
        </p>
      )}
    </section>
  );
}

export function UsagePanel({ botId, onMenu }: { botId: string; onMenu(): void }) {
  const { api, bots } = useSession();
  const bot = bots?.find((candidate) => candidate.id === botId);
  const id = useId();
  const [view, setView] = useState<BotBudgetView>();
  const [fields, setFields] = useState<Fields>(fieldsOf({}));
  const [error, setError] = useState<string>();
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (bot === undefined) return;
    const controller = new AbortController();
    api
      .botBudget(bot.id, controller.signal)
      .then((loaded) => {
        setView(loaded);
        setFields(fieldsOf(loaded.budget));
      })
      .catch((caught: unknown) => {
        if (!controller.signal.aborted)
          setError(caught instanceof Error ? caught.message : String(caught));
      });
    return () => controller.abort();
  }, [api, bot]);

  if (bot === undefined)
    return (
      <>
        <Header title="Usage" onMenu={onMenu} />
        {bots === undefined ? <EmptyState title="Loading…" /> : <BotNotFound />}
      </>
    );

  const save = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setSaved(false);
    const budget: Budget = {};
    for (const { key } of limits) {
      const text = fields[key].trim();
      // The server says what is wrong with a value; the page only leaves empty fields out.
      if (text !== "") budget[key] = Number(text);
    }
    try {
      const updated = await api.setBotBudget(bot.id, budget);
      setView(updated);
      setFields(fieldsOf(updated.budget));
      setSaved(true);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <Header title={`Usage of ${bot.name}`} subtitle="Today and this month, UTC" onMenu={onMenu}>
        <EditBotLink bot={bot} />
      </Header>
      <div className="page usage-panel">
        {view === undefined ? (
          error === undefined ? (
            <EmptyState title="Loading…" />
          ) : (
            <p className="notice notice-error" role="alert">
              {error}
            </p>
          )
        ) : (
          <>
            <div className="usage-amounts">
              <Amount title="Today" amount={view.today} currency={view.currency} />
              <Amount title="This month" amount={view.thisMonth} currency={view.currency} />
            </div>
            {view.parkedTurns > 0 && (
              <p className="notice notice-warn" role="status">
                {view.parkedTurns} {view.parkedTurns === 1 ? "turn is" : "turns are"} paused at this
                budget. Raise the limit it reached (or clear it) and{" "}
                {view.parkedTurns === 1 ? "it goes" : "they go"} on where{" "}
                {view.parkedTurns === 1 ? "it" : "they"} stopped.
              </p>
            )}
            <form
              className="form"
              onSubmit={(event) => void save(event)}
              aria-label={`Budget of ${bot.name}`}
            >
              <fieldset className="field">
                <legend>Budget</legend>
                <p className="muted field-help" id={`${id}-help`}>
                  Checked before every model call. When a limit is reached the turn pauses (nothing
                  runs, nothing is lost) and you are told; it goes on when you raise the limit, or
                  at the next day or month (UTC). Leave a field empty for no limit. Costs are in{" "}
                  {view.currency}, from the price table; a model without a price counts only toward
                  token limits.
                </p>
                {limits.map(({ key, label, unit }) => (
                  <label className="field" key={key}>
                    <span>
                      {label}
                      {unit === "cost" ? ` (${view.currency})` : ""}
                    </span>
                    <input
                      name={key}
                      inputMode={unit === "tokens" ? "numeric" : "decimal"}
                      value={fields[key]}
                      onChange={(event) => setFields({ ...fields, [key]: event.target.value })}
                      placeholder="No limit"
                      aria-describedby={`${id}-help`}
                    />
                  </label>
                ))}
              </fieldset>
              {error !== undefined && (
                <p className="notice notice-error" role="alert">
                  {error}
                </p>
              )}
              {saved && error === undefined && (
                <p className="notice notice-info" role="status">
                  Budget saved.
                </p>
              )}
              <div className="form-actions">
                <button className="button button-primary" type="submit" disabled={busy}>
                  <Save size={16} aria-hidden="true" /> {busy ? "Saving…" : "Save budget"}
                </button>
              </div>
            </form>
          </>
        )}
      </div>
    </>
  );
}
