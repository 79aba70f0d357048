/**
 * Teams (docs/teams.md): the caller's teams, a form to make one, a team's members (add by account
 * id, change a role, remove, leave) and an invitation link shown once; and the page an invitation
 * link opens, which accepts it for the signed-in account.
 */
import { Link2, Plus, UserMinus, Users } from "lucide-react";
import { useCallback, useEffect, useState, type FormEvent } from "react";
import type { CreatedInvitation, Team, TeamDetail, TeamRole } from "../api/types.ts";
import { navigate, paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
import "./teams.css";
import { EmptyState, Header } from "./ui.tsx";

const roles: TeamRole[] = ["member", "admin", "owner"];
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

export function TeamsPage({ onMenu }: { onMenu(): void }) {
  const { api } = useSession();
  const [teams, setTeams] = useState<Team[]>();
  const [selected, setSelected] = useState<string>();
  const [name, setName] = useState("");
  const [error, setError] = useState<string>();

  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        const list = await api.listTeams(signal);
        setTeams(list);
        setSelected((current) => current ?? list[0]?.id);
        setError(undefined);
      } catch (caught) {
        if (signal?.aborted !== true) setError(messageOf(caught));
      }
    },
    [api],
  );
  useEffect(() => {
    const controller = new AbortController();
    void load(controller.signal);
    return () => controller.abort();
  }, [load]);

  const create = async (event: FormEvent) => {
    event.preventDefault();
    try {
      const team = await api.createTeam(name.trim());
      setName("");
      setSelected(team.id);
      await load();
    } catch (caught) {
      setError(messageOf(caught));
    }
  };

  return (
    <>
      <Header title="Teams" onMenu={onMenu} />
      <div className="page">
        <p className="muted">
          A team shares bots: publish one of your bots to a team in its settings, and the team's
          members can talk to it — on their own computers, with their own accounts.
        </p>
        <form className="form-row" onSubmit={(event) => void create(event)}>
          <input
            aria-label="New team's name"
            placeholder="New team's name"
            value={name}
            maxLength={80}
            onChange={(event) => setName(event.target.value)}
          />
          <button type="submit" className="button button-primary" disabled={name.trim() === ""}>
            <Plus size={16} aria-hidden="true" /> Create team
          </button>
        </form>
        {error !== undefined && (
          <p className="notice notice-error" role="alert">
            {error}
          </p>
        )}
        {teams === undefined && <p className="muted">Loading…</p>}
        {teams?.length === 0 && (
          <EmptyState title="No teams yet" detail="Create one, or open an invitation link." />
        )}
        {teams !== undefined && teams.length > 0 && (
          <ul className="team-list" aria-label="Your teams">
            {teams.map((team) => (
              <li key={team.id}>
                <button
                  type="button"
                  className="nav-item"
                  aria-current={team.id === selected ? "true" : undefined}
                  onClick={() => setSelected(team.id)}
                >
                  <Users size={16} aria-hidden="true" />
                  <span className="nav-label">{team.name}</span>
                  <span className="badge badge-small">{team.role}</span>
                </button>
              </li>
            ))}
          </ul>
        )}
        {selected !== undefined && (
          <TeamPanel key={selected} teamId={selected} onLeft={() => void load()} />
        )}
      </div>
    </>
  );
}

function TeamPanel({ teamId, onLeft }: { teamId: string; onLeft(): void }) {
  const { api, me } = useSession();
  const [team, setTeam] = useState<TeamDetail>();
  const [accountId, setAccountId] = useState("");
  const [role, setRole] = useState<TeamRole>("member");
  const [invitation, setInvitation] = useState<CreatedInvitation>();
  const [error, setError] = useState<string>();

  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        setTeam(await api.getTeam(teamId, signal));
      } catch (caught) {
        if (signal?.aborted !== true) setError(messageOf(caught));
      }
    },
    [api, teamId],
  );
  useEffect(() => {
    const controller = new AbortController();
    void load(controller.signal);
    return () => controller.abort();
  }, [load]);

  const run = async (action: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await action();
      await load();
    } catch (caught) {
      setError(messageOf(caught));
    }
  };
  if (team === undefined)
    return error === undefined ? <p className="muted">Loading…</p> : <p role="alert">{error}</p>;
  const manages = team.role === "owner" || team.role === "admin";

  return (
    <section className="team-panel" aria-label={`Team ${team.name}`}>
      <h2>{team.name}</h2>
      <table className="team-members">
        <thead>
          <tr>
            <th>Member</th>
            <th>Role</th>
            <th>
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {team.members.map((member) => (
            <tr key={member.accountId}>
              <td>
                {member.name} <code className="muted">{member.accountId}</code>
              </td>
              <td>
                {manages ? (
                  <select
                    aria-label={`Role of ${member.name}`}
                    value={member.role}
                    onChange={(event) =>
                      void run(() =>
                        api.putTeamMember(
                          team.id,
                          member.accountId,
                          event.target.value as TeamRole,
                        ),
                      )
                    }
                  >
                    {roles.map((option) => (
                      <option key={option}>{option}</option>
                    ))}
                  </select>
                ) : (
                  member.role
                )}
              </td>
              <td>
                {(manages || member.accountId === me.id) && (
                  <button
                    type="button"
                    className="button"
                    onClick={() =>
                      void run(async () => {
                        await api.removeTeamMember(team.id, member.accountId);
                        if (member.accountId === me.id) onLeft();
                      })
                    }
                  >
                    <UserMinus size={16} aria-hidden="true" />
                    {member.accountId === me.id ? "Leave" : "Remove"}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {error !== undefined && (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      )}
      {manages && (
        <>
          <form
            className="form-row"
            onSubmit={(event) => {
              event.preventDefault();
              void run(async () => {
                await api.putTeamMember(team.id, accountId.trim(), role);
                setAccountId("");
              });
            }}
          >
            <input
              aria-label="Account id to add"
              placeholder="Account id (acct_…)"
              value={accountId}
              onChange={(event) => setAccountId(event.target.value)}
            />
            <select
              aria-label="Role"
              value={role}
              onChange={(event) => setRole(event.target.value as TeamRole)}
            >
              {roles.map((option) => (
                <option key={option}>{option}</option>
              ))}
            </select>
            <button type="submit" className="button" disabled={accountId.trim() === ""}>
              <Plus size={16} aria-hidden="true" /> Add
            </button>
          </form>
          <div className="form-row">
            <button
              type="button"
              className="button"
              onClick={() =>
                void run(async () => setInvitation(await api.createInvitation(team.id, role)))
              }
            >
              <Link2 size={16} aria-hidden="true" /> Invitation link ({role})
            </button>
          </div>
          {invitation !== undefined && (
            <p className="notice">
              Send this link; it works once, until {new Date(invitation.expiresAt).toLocaleString()}
              , and is shown only now:{" "}
              <input
                readOnly
                aria-label="Invitation link"
                value={invitation.url}
                onFocus={(event) => event.target.select()}
              />
            </p>
          )}
        </>
      )}
    </section>
  );
}

/** `/teams/join#<token>`: the token never leaves the fragment until the person accepts. */
export function TeamJoinPage({ onMenu }: { onMenu(): void }) {
  const { api } = useSession();
  const token = window.location.hash.replace(/^#/, "");
  const [state, setState] = useState<"ready" | "joining" | { error: string }>("ready");

  const accept = async () => {
    setState("joining");
    try {
      await api.acceptInvitation(token);
      window.history.replaceState(null, "", paths.teams);
      navigate(paths.teams, { replace: true });
    } catch (caught) {
      setState({ error: messageOf(caught) });
    }
  };

  return (
    <>
      <Header title="Join a team" onMenu={onMenu} />
      <div className="page">
        {token === "" ? (
          <EmptyState
            title="This link has no invitation in it"
            detail="Open the whole link you were sent (it ends with #rti_…)."
          />
        ) : (
          <>
            <p>You were invited to a team. Joining lets you talk to the bots it shares.</p>
            <button
              type="button"
              className="button button-primary"
              disabled={state === "joining"}
              onClick={() => void accept()}
            >
              <Users size={16} aria-hidden="true" /> Join the team
            </button>
            {typeof state === "object" && (
              <p className="notice notice-error" role="alert">
                {state.error}
              </p>
            )}
          </>
        )}
      </div>
    </>
  );
}
