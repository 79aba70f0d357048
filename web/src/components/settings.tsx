/**
 * Settings (docs/models.md "From the web app", docs/api.md): model providers (admin), API tokens,
 * notifications, the admin's accounts list, and sign out. Loaded on demand (the first load stays
 * small). Keys and tokens are shown once, when made, and never again.
 */
import { Bell, KeyRound, LogOut, Plug, Plus, Trash2, Users } from "lucide-react";
import { useCallback, useEffect, useMemo, useState, type FormEvent } from "react";
import { settingsClient, type SettingsClient } from "../api/settings-client.ts";
import type {
  AccountList,
  ModelProviderKind,
  ModelProviderList,
  ModelProviderView,
  OwnerWebhook,
  ProviderTestResult,
  Token,
} from "../api/types.ts";
import {
  browserPermission,
  requestBrowserPermission,
  type BrowserPermission,
} from "../lib/browser-notifications.ts";
import { formatRelative } from "../lib/format.ts";
import { onLinkClick, paths, type SettingsSection } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
import "./settings.css";
import { Header } from "./ui.tsx";

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * What `fetch` answers, loaded when the section opens (aborted when it closes); `load` fetches
 * again after a change. `error` says why the last load or change failed.
 */
function useLoaded<T>(fetch: (signal?: AbortSignal) => Promise<T>) {
  const [value, setValue] = useState<T>();
  const [error, setError] = useState<string>();
  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        setValue(await fetch(signal));
        setError(undefined);
      } catch (caught) {
        if (signal?.aborted !== true) setError(messageOf(caught));
      }
    },
    [fetch],
  );
  useEffect(() => {
    const controller = new AbortController();
    void load(controller.signal);
    return () => controller.abort();
  }, [load]);
  return { value, error, setError, load };
}

const sectionNames: Record<SettingsSection, string> = {
  models: "Models",
  tokens: "API tokens",
  notifications: "Notifications",
  accounts: "Accounts",
};
const adminSections = new Set<SettingsSection>(["models", "accounts"]);

export default function SettingsPage({
  section,
  onMenu,
}: {
  section: SettingsSection;
  onMenu(): void;
}) {
  const { api, me, signOut } = useSession();
  const client = useMemo(() => settingsClient(api), [api]);
  const sections = (Object.keys(sectionNames) as SettingsSection[]).filter(
    (name) => me.isAdmin || !adminSections.has(name),
  );
  return (
    <>
      <Header title={`Settings · ${sectionNames[section]}`} onMenu={onMenu} />
      <div className="page settings-page">
        <nav className="settings-tabs" aria-label="Settings sections">
          {sections.map((name) => (
            <a
              key={name}
              className="settings-tab"
              href={paths.settings(name)}
              aria-current={name === section ? "page" : undefined}
              onClick={(event) => onLinkClick(event, paths.settings(name))}
            >
              {sectionNames[name]}
            </a>
          ))}
          <button type="button" className="button button-small settings-signout" onClick={signOut}>
            <LogOut size={14} aria-hidden="true" /> Sign out
          </button>
        </nav>
        {adminSections.has(section) && !me.isAdmin ? (
          <p className="notice notice-info">
            Only an admin account manages {sectionNames[section].toLowerCase()}. Ask your Roost
            admin.
          </p>
        ) : section === "models" ? (
          <ModelsSection client={client} />
        ) : section === "tokens" ? (
          <TokensSection client={client} />
        ) : section === "notifications" ? (
          <NotificationsSection client={client} />
        ) : (
          <AccountsSection client={client} />
        )}
      </div>
    </>
  );
}

/** A value shown once (a new token, a webhook secret), with a copy button. */
function ShownOnce({ label, value, note }: { label: string; value: string; note: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="notice notice-info shown-once" role="status">
      <label className="field">
        <span>{label}</span>
        <input readOnly value={value} onFocus={(event) => event.target.select()} />
      </label>
      <p className="muted">{note}</p>
      <button
        type="button"
        className="button button-small"
        onClick={() =>
          void navigator.clipboard
            ?.writeText(value)
            .then(() => setCopied(true))
            .catch(() => setCopied(false))
        }
      >
        {copied ? "Copied" : "Copy"}
      </button>
    </div>
  );
}

function ErrorNotice({ error }: { error: string | undefined }) {
  if (error === undefined) return null;
  return (
    <p className="notice notice-error" role="alert">
      {error}
    </p>
  );
}

// ——— Models ———

const kindNames: Record<ModelProviderKind, string> = {
  openai: "OpenAI",
  anthropic: "Anthropic",
  xai: "xAI",
  "openai-compatible": "OpenAI-compatible server (Ollama, vLLM, llama.cpp, …)",
};

function ModelsSection({ client }: { client: SettingsClient }) {
  const {
    value: list,
    error,
    load,
  } = useLoaded<ModelProviderList>(useCallback((signal) => client.providers(signal), [client]));
  const [editing, setEditing] = useState<ModelProviderView | "new">();

  return (
    <section aria-labelledby="settings-models">
      <h2 id="settings-models">Model providers</h2>
      <p className="muted">
        Keys are stored encrypted and never shown again. Providers set in the server's environment (
        <code>ROOST_OPENAI_API_KEY</code> and the like) are shown here read-only and win over
        anything stored here. Changes reach new turns at once.
      </p>
      {list !== undefined && (
        <p>
          Platform default: <code>{list.defaultModel.spec}</code>
          {list.defaultModel.isDemo && <span className="badge badge-demo badge-small">Demo</span>}
        </p>
      )}
      <ErrorNotice error={error} />
      {list === undefined && error === undefined && <p className="muted">Loading…</p>}
      {list?.providers.length === 0 && (
        <p className="muted">
          No provider yet: every bot uses the demo model. Add a key or a server below.
        </p>
      )}
      <ul className="provider-list" aria-label="Configured providers">
        {list?.providers.map((provider) => (
          <ProviderRow
            key={`${provider.source}:${provider.id}`}
            provider={provider}
            client={client}
            onEdit={() => setEditing(provider)}
            onRemoved={() => void load()}
          />
        ))}
      </ul>
      {editing === undefined ? (
        <button type="button" className="button button-primary" onClick={() => setEditing("new")}>
          <Plus size={16} aria-hidden="true" /> Add a provider
        </button>
      ) : (
        <ProviderForm
          key={editing === "new" ? "new" : editing.id}
          client={client}
          existing={editing === "new" ? undefined : editing}
          taken={new Set(list?.providers.map((provider) => provider.id))}
          onDone={() => {
            setEditing(undefined);
            void load();
          }}
          onCancel={() => setEditing(undefined)}
        />
      )}
    </section>
  );
}

function ProviderRow({
  provider,
  client,
  onEdit,
  onRemoved,
}: {
  provider: ModelProviderView;
  client: SettingsClient;
  onEdit(): void;
  onRemoved(): void;
}) {
  const [result, setResult] = useState<ProviderTestResult>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const fromEnvironment = provider.source === "environment";
  const test = async () => {
    setBusy(true);
    setError(undefined);
    try {
      setResult(await client.testProvider(provider.id));
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };
  const remove = async () => {
    if (!window.confirm(`Remove ${provider.label}? Bots that use its models stop working.`)) return;
    try {
      await client.deleteProvider(provider.id);
      onRemoved();
    } catch (caught) {
      setError(messageOf(caught));
    }
  };
  return (
    <li className="provider-row" aria-label={`${provider.label} (${provider.source})`}>
      <div className="provider-head">
        <strong>{provider.label}</strong>
        <span className="badge badge-small">
          {fromEnvironment ? "Set by the server's environment" : "Set here"}
        </span>
        {provider.shadowed && (
          <span className="badge badge-small badge-warn">Not used: the environment's wins</span>
        )}
      </div>
      <dl className="provider-facts">
        <dt>Models</dt>
        <dd>
          <code>{provider.specPrefix}:&lt;model&gt;</code>
        </dd>
        <dt>Base URL</dt>
        <dd>{provider.baseUrl ?? "the provider's public endpoint"}</dd>
        <dt>Key</dt>
        <dd>
          {provider.key.set
            ? provider.key.lastFour === null
              ? "set"
              : `set (ends in ${provider.key.lastFour})`
            : "none"}
        </dd>
        {provider.environment.length > 0 && (
          <>
            <dt>Environment</dt>
            <dd>
              {provider.environment.map((name) => (
                <code key={name}>{name} </code>
              ))}
            </dd>
          </>
        )}
      </dl>
      <div className="form-actions">
        <button
          type="button"
          className="button button-small"
          onClick={() => void test()}
          disabled={busy}
        >
          <Plug size={14} aria-hidden="true" /> {busy ? "Testing…" : "Test connection"}
        </button>
        {!fromEnvironment && (
          <>
            <button type="button" className="button button-small" onClick={onEdit}>
              <KeyRound size={14} aria-hidden="true" /> Edit
            </button>
            <button
              type="button"
              className="button button-small button-danger"
              onClick={() => void remove()}
            >
              <Trash2 size={14} aria-hidden="true" /> Remove
            </button>
          </>
        )}
      </div>
      {result !== undefined && (
        <p className={`notice ${result.ok ? "notice-info" : "notice-error"}`} role="status">
          {result.message}
        </p>
      )}
      <ErrorNotice error={error} />
    </li>
  );
}

function ProviderForm({
  client,
  existing,
  taken,
  onDone,
  onCancel,
}: {
  client: SettingsClient;
  existing: ModelProviderView | undefined;
  taken: Set<string>;
  onDone(): void;
  onCancel(): void;
}) {
  const [kind, setKind] = useState<ModelProviderKind>(existing?.kind ?? "openai-compatible");
  const [name, setName] = useState(existing?.id ?? "");
  const [label, setLabel] = useState(existing?.label ?? "");
  const [baseUrl, setBaseUrl] = useState(existing?.baseUrl ?? "");
  const [apiKey, setApiKey] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const compatible = kind === "openai-compatible";
  const id = compatible ? name.trim() : kind;
  const replacing = existing === undefined && taken.has(id) && !compatible;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await client.putProvider(id, {
        kind,
        ...(label.trim() === "" ? {} : { label: label.trim() }),
        baseUrl: baseUrl.trim() === "" ? null : baseUrl.trim(),
        // Left empty while editing: keep the stored key.
        ...(apiKey.trim() === "" && existing !== undefined
          ? {}
          : { apiKey: apiKey.trim() === "" ? null : apiKey.trim() }),
      });
      onDone();
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      className="form provider-form"
      aria-label={existing === undefined ? "Add a provider" : `Edit ${existing.label}`}
      onSubmit={(event) => void submit(event)}
    >
      <label className="field">
        <span>Provider</span>
        <select
          name="kind"
          value={kind}
          disabled={existing !== undefined}
          onChange={(event) => setKind(event.target.value as ModelProviderKind)}
        >
          {(Object.keys(kindNames) as ModelProviderKind[]).map((value) => (
            <option key={value} value={value}>
              {kindNames[value]}
            </option>
          ))}
        </select>
      </label>
      {compatible && (
        <label className="field">
          <span>Name</span>
          <input
            name="name"
            value={name}
            required
            disabled={existing !== undefined}
            pattern="[a-z][a-z0-9\-]{0,31}"
            placeholder="e.g. ollama"
            aria-describedby="provider-name-help"
            onChange={(event) => setName(event.target.value.toLowerCase())}
          />
          <small className="muted field-help" id="provider-name-help">
            Lowercase letters, digits and dashes. Bots name its models{" "}
            <code>{name.trim() === "" ? "name" : name.trim()}:&lt;model&gt;</code>.
          </small>
        </label>
      )}
      <label className="field">
        <span>Label (optional)</span>
        <input
          name="label"
          value={label}
          maxLength={80}
          placeholder={compatible ? "e.g. Ollama on the GPU box" : kindNames[kind]}
          onChange={(event) => setLabel(event.target.value)}
        />
      </label>
      <label className="field">
        <span>{compatible ? "Base URL" : "Base URL (optional)"}</span>
        <input
          name="baseUrl"
          type="url"
          value={baseUrl}
          required={compatible}
          placeholder={compatible ? "http://127.0.0.1:11434/v1" : "the provider's public endpoint"}
          onChange={(event) => setBaseUrl(event.target.value)}
        />
      </label>
      <label className="field">
        <span>
          {compatible ? "API key (optional)" : "API key"}
          {existing?.key.set === true && " — leave empty to keep the stored one"}
        </span>
        <input
          name="apiKey"
          type="password"
          autoComplete="off"
          value={apiKey}
          required={!compatible && existing === undefined}
          onChange={(event) => setApiKey(event.target.value)}
        />
      </label>
      {replacing && (
        <p className="notice notice-warn">
          A {kindNames[kind]} key is stored already: saving replaces it.
        </p>
      )}
      <ErrorNotice error={error} />
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={busy || id === ""}>
          {busy ? "Saving…" : "Save provider"}
        </button>
        <button type="button" className="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

// ——— API tokens ———

function TokensSection({ client }: { client: SettingsClient }) {
  const { signOut } = useSession();
  const {
    value: tokens,
    error,
    setError,
    load,
  } = useLoaded<Token[]>(useCallback((signal) => client.tokens(signal), [client]));
  const [name, setName] = useState("");
  const [created, setCreated] = useState<{ name: string; token: string }>();

  const create = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    try {
      const token = await client.createToken(name.trim());
      setCreated({ name: name.trim(), token: token.token });
      setName("");
      await load();
    } catch (caught) {
      setError(messageOf(caught));
    }
  };
  const revoke = async (token: Token) => {
    const warning = token.current
      ? `Revoke "${token.name}"? It is the token this page uses: you will be signed out.`
      : `Revoke "${token.name}"? Anything using it stops working.`;
    if (!window.confirm(warning)) return;
    try {
      await client.revokeToken(token.id);
      if (token.current) signOut();
      else await load();
    } catch (caught) {
      setError(messageOf(caught));
    }
  };

  return (
    <section aria-labelledby="settings-tokens">
      <h2 id="settings-tokens">API tokens</h2>
      <p className="muted">
        Tokens sign in the CLI (<code>roost --token</code>), scripts and other clients as you.
      </p>
      <form className="form-row" onSubmit={(event) => void create(event)}>
        <input
          aria-label="New token's name"
          placeholder="New token's name, e.g. laptop CLI"
          value={name}
          maxLength={80}
          onChange={(event) => setName(event.target.value)}
        />
        <button type="submit" className="button button-primary" disabled={name.trim() === ""}>
          <Plus size={16} aria-hidden="true" /> Create token
        </button>
      </form>
      {created !== undefined && (
        <ShownOnce
          label={`Token "${created.name}"`}
          value={created.token}
          note="Copy it now: it is not shown again."
        />
      )}
      <ErrorNotice error={error} />
      {tokens === undefined ? (
        <p className="muted">Loading…</p>
      ) : (
        <table className="settings-table" aria-label="Your API tokens">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {tokens.map((token) => (
              <tr key={token.id}>
                <td>
                  {token.name}
                  {token.current && <span className="badge badge-small">This browser</span>}
                </td>
                <td>{formatRelative(token.createdAt)}</td>
                <td>{token.lastUsedAt === null ? "never" : formatRelative(token.lastUsedAt)}</td>
                <td>
                  <button
                    type="button"
                    className="button button-small button-danger"
                    aria-label={`Revoke ${token.name}`}
                    onClick={() => void revoke(token)}
                  >
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

// ——— Notifications ———

function NotificationsSection({ client }: { client: SettingsClient }) {
  const [permission, setPermission] = useState<BrowserPermission>(browserPermission);
  const [webhook, setWebhook] = useState<OwnerWebhook | null>();
  const [url, setUrl] = useState("");
  const [secret, setSecret] = useState<string>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    const controller = new AbortController();
    client
      .notificationsWebhook(controller.signal)
      .then((found) => setWebhook(found ?? null))
      .catch((caught: unknown) => {
        if (!controller.signal.aborted) setError(messageOf(caught));
      });
    return () => controller.abort();
  }, [client]);

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    try {
      const created = await client.setNotificationsWebhook(url.trim());
      setWebhook(created);
      setSecret(created.secret);
      setUrl("");
    } catch (caught) {
      setError(messageOf(caught));
    }
  };
  const remove = async () => {
    try {
      await client.deleteNotificationsWebhook();
      setWebhook(null);
      setSecret(undefined);
    } catch (caught) {
      setError(messageOf(caught));
    }
  };

  return (
    <section aria-labelledby="settings-notifications">
      <h2 id="settings-notifications">Notifications</h2>
      <p className="muted">
        You are told when a bot you asked to notify you finishes a turn, stops with an error, or
        leaves a draft, and when a routine or a budget needs you. Turn it on per bot in the bot's
        settings (“Notify me when this bot finishes or needs input”).
      </p>
      <h3>In this browser</h3>
      <p>
        Browser notifications:{" "}
        <strong>
          {permission === "granted"
            ? "on"
            : permission === "denied"
              ? "blocked (allow them in the browser's site settings)"
              : permission === "unsupported"
                ? "not supported by this browser"
                : "off"}
        </strong>
      </p>
      {permission === "default" && (
        <button
          type="button"
          className="button"
          onClick={() => void requestBrowserPermission().then(setPermission)}
        >
          <Bell size={16} aria-hidden="true" /> Turn on browser notifications
        </button>
      )}
      <h3>Webhook</h3>
      <p className="muted">
        Roost also posts each notification as JSON to a URL of yours, signed with{" "}
        <code>x-roost-signature</code> (docs/results.md).
      </p>
      {webhook === undefined ? (
        <p className="muted">Loading…</p>
      ) : webhook === null ? (
        <p>No webhook is set.</p>
      ) : (
        <p>
          Posting to <code>{webhook.url}</code>{" "}
          <button
            type="button"
            className="button button-small button-danger"
            onClick={() => void remove()}
          >
            Remove
          </button>
        </p>
      )}
      <form className="form-row" onSubmit={(event) => void save(event)}>
        <input
          type="url"
          aria-label="Notifications webhook URL"
          placeholder="https://example.com/roost-notifications"
          value={url}
          onChange={(event) => setUrl(event.target.value)}
        />
        <button type="submit" className="button button-primary" disabled={url.trim() === ""}>
          {webhook === null || webhook === undefined ? "Set webhook" : "Replace webhook"}
        </button>
      </form>
      {secret !== undefined && (
        <ShownOnce
          label="Signing secret"
          value={secret}
          note="Check each delivery's signature with it. It is not shown again."
        />
      )}
      <ErrorNotice error={error} />
    </section>
  );
}

// ——— Accounts ———

function AccountsSection({ client }: { client: SettingsClient }) {
  const {
    value: accounts,
    error,
    setError,
    load,
  } = useLoaded<AccountList["accounts"]>(
    useCallback((signal) => client.accounts(signal), [client]),
  );
  const [name, setName] = useState("");
  const [issued, setIssued] = useState<{ name: string; token: string }>();

  const create = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    try {
      const created = await client.createAccount(name.trim());
      setIssued({ name: created.account.name, token: created.token });
      setName("");
      await load();
    } catch (caught) {
      setError(messageOf(caught));
    }
  };
  const issue = async (account: AccountList["accounts"][number]) => {
    setError(undefined);
    try {
      const token = await client.createToken("issued by the admin", account.id);
      setIssued({ name: account.name, token: token.token });
    } catch (caught) {
      setError(messageOf(caught));
    }
  };

  return (
    <section aria-labelledby="settings-accounts">
      <h2 id="settings-accounts">Accounts</h2>
      <p className="muted">
        Each account has its own bots, conversations and computer. A new account comes with its
        first token: give it to the person, who signs in with it.
      </p>
      <form className="form-row" onSubmit={(event) => void create(event)}>
        <input
          aria-label="New account's name"
          placeholder="New account's name"
          value={name}
          maxLength={80}
          onChange={(event) => setName(event.target.value)}
        />
        <button type="submit" className="button button-primary" disabled={name.trim() === ""}>
          <Users size={16} aria-hidden="true" /> Create account
        </button>
      </form>
      {issued !== undefined && (
        <ShownOnce
          label={`Token for ${issued.name}`}
          value={issued.token}
          note="Give it to them over a private channel: it is not shown again."
        />
      )}
      <ErrorNotice error={error} />
      {accounts === undefined ? (
        <p className="muted">Loading…</p>
      ) : (
        <table className="settings-table" aria-label="Accounts">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Account id</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {accounts.map((account) => (
              <tr key={account.id}>
                <td>
                  {account.name}
                  {account.isAdmin && <span className="badge badge-small">Admin</span>}
                </td>
                <td>
                  <code>{account.id}</code>
                </td>
                <td>{formatRelative(account.createdAt)}</td>
                <td>
                  <button
                    type="button"
                    className="button button-small"
                    aria-label={`Issue a token for ${account.name}`}
                    onClick={() => void issue(account)}
                  >
                    Issue a token
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
