/** The teams part of the store (team-types.ts, TEAM1–TEAM5), written once against `SqlDriver`. */
import { NotFoundError, RoostError } from "../errors/index.ts";
import type { IdGenerator } from "../ids.ts";
import type { SqlDriver, SqlExecutor } from "./driver.ts";
import type {
  CredentialConsent,
  Team,
  TeamInvitation,
  TeamMember,
  TeamRole,
  TeamStore,
} from "./team-types.ts";
import type { AuditWriter } from "./types.ts";

interface TeamRow {
  id: string;
  name: string;
  created_by: string;
  created_at: number | string;
}
interface MemberRow {
  team_id: string;
  account_id: string;
  name: string;
  role: string;
  created_at: number | string;
}
interface InvitationRow {
  id: string;
  team_id: string;
  role: string;
  created_by: string;
  expires_at: number | string;
  accepted_by: string | null;
  accepted_at: number | string | null;
  created_at: number | string;
}

interface ConsentRow {
  bot_id: string;
  place_id: string;
  owner_account_id: string;
  kind: string;
  name: string;
  granted_at: number | string;
}

const toTeam = (row: TeamRow): Team => ({
  id: row.id,
  name: row.name,
  createdBy: row.created_by,
  createdAt: Number(row.created_at),
});
const toMember = (row: MemberRow): TeamMember => ({
  teamId: row.team_id,
  accountId: row.account_id,
  name: row.name,
  role: row.role as TeamRole,
  createdAt: Number(row.created_at),
});
const toInvitation = (row: InvitationRow): TeamInvitation => ({
  id: row.id,
  teamId: row.team_id,
  role: row.role as TeamRole,
  createdBy: row.created_by,
  expiresAt: Number(row.expires_at),
  acceptedBy: row.accepted_by,
  acceptedAt: row.accepted_at === null ? null : Number(row.accepted_at),
  createdAt: Number(row.created_at),
});

const rank: Record<TeamRole, number> = { owner: 3, admin: 2, member: 1 };

export function createTeamQueries(
  driver: SqlDriver,
  now: () => number,
  ids: IdGenerator,
  insertAudit: AuditWriter,
): TeamStore {
  /** TEAM1: the team's row serializes every membership change of the team (Postgres). */
  async function lockTeam(tx: SqlExecutor, teamId: string) {
    const rows = await tx.all<{ id: string }>(
      `SELECT id FROM teams WHERE id = ?${driver.lockRows}`,
      [teamId],
    );
    if (rows.length === 0) throw new NotFoundError("team", teamId);
  }
  async function roleIn(tx: SqlExecutor, teamId: string, accountId: string) {
    const rows = await tx.all<{ role: string }>(
      "SELECT role FROM team_members WHERE team_id = ? AND account_id = ?",
      [teamId, accountId],
    );
    return rows[0]?.role as TeamRole | undefined;
  }
  async function ownerCount(tx: SqlExecutor, teamId: string) {
    const rows = await tx.all<{ count: number | string }>(
      "SELECT COUNT(*) AS count FROM team_members WHERE team_id = ? AND role = 'owner'",
      [teamId],
    );
    return Number(rows[0]?.count ?? 0);
  }
  const grantOnce = (consent: Omit<CredentialConsent, "grantedAt">) =>
    driver.transaction(async (tx) => {
      const key = [
        consent.botId,
        consent.placeId,
        consent.ownerAccountId,
        consent.kind,
        consent.name,
      ];
      const held = await tx.all(
        `SELECT name FROM credential_consents
         WHERE bot_id = ? AND place_id = ? AND owner_account_id = ? AND kind = ? AND name = ?`,
        key,
      );
      if (held.length > 0) return; // TEAM7
      await tx.run(
        `INSERT INTO credential_consents (bot_id, place_id, owner_account_id, kind, name, granted_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
        [...key, now()],
      );
      await insertAudit(tx, {
        accountId: consent.ownerAccountId,
        action: "consent.grant",
        target: consent.botId,
        detail: { placeId: consent.placeId, kind: consent.kind, name: consent.name },
      }); // TEAM7
    });
  const lastOwner = () =>
    new RoostError(
      "conflict",
      "a team needs at least one owner: make another member an owner first, then try again",
    );

  return {
    async createTeam({ name, ownerAccountId, limit }) {
      return driver.transaction(async (tx) => {
        await tx.all(`SELECT id FROM accounts WHERE id = ?${driver.lockRows}`, [ownerAccountId]);
        const rows = await tx.all<{ count: number | string }>(
          "SELECT COUNT(*) AS count FROM team_members WHERE account_id = ?",
          [ownerAccountId],
        );
        if (Number(rows[0]?.count ?? 0) >= limit)
          throw new RoostError(
            "conflict",
            `an account belongs to at most ${limit} teams; leave one you no longer need first`,
          ); // TEAM8
        const at = now();
        const team: Team = { id: ids("team"), name, createdBy: ownerAccountId, createdAt: at };
        await tx.run("INSERT INTO teams (id, name, created_by, created_at) VALUES (?, ?, ?, ?)", [
          team.id,
          name,
          ownerAccountId,
          at,
        ]);
        await tx.run(
          "INSERT INTO team_members (team_id, account_id, role, created_at) VALUES (?, ?, 'owner', ?)",
          [team.id, ownerAccountId, at],
        );
        await insertAudit(tx, {
          accountId: ownerAccountId,
          action: "team.create",
          target: team.id,
          detail: { name },
        }); // TEAM5
        return team;
      });
    },

    async getTeam(id) {
      const rows = await driver.all<TeamRow>("SELECT * FROM teams WHERE id = ?", [id]);
      return rows[0] === undefined ? undefined : toTeam(rows[0]);
    },

    async listTeamsOf(accountId) {
      const rows = await driver.all<TeamRow & { role: string }>(
        `SELECT t.*, m.role FROM team_members m JOIN teams t ON t.id = m.team_id
         WHERE m.account_id = ? ORDER BY t.created_at, t.id`,
        [accountId],
      );
      return rows.map((row) => ({ ...toTeam(row), role: row.role as TeamRole }));
    },

    async listTeamMembers(teamId) {
      const rows = await driver.all<MemberRow>(
        `SELECT m.team_id, m.account_id, a.name, m.role, m.created_at
         FROM team_members m JOIN accounts a ON a.id = m.account_id
         WHERE m.team_id = ? ORDER BY m.created_at, m.account_id`,
        [teamId],
      );
      return rows.map(toMember);
    },

    async getTeamRole(teamId, accountId) {
      return roleIn(driver, teamId, accountId);
    },

    async putTeamMember({ teamId, accountId, role, actorAccountId }) {
      return driver.transaction(async (tx) => {
        await lockTeam(tx, teamId);
        const old = await roleIn(tx, teamId, accountId);
        if (old === "owner" && role !== "owner" && (await ownerCount(tx, teamId)) <= 1)
          throw lastOwner(); // TEAM1
        if (old === undefined)
          await tx.run(
            "INSERT INTO team_members (team_id, account_id, role, created_at) VALUES (?, ?, ?, ?)",
            [teamId, accountId, role, now()],
          );
        else
          await tx.run("UPDATE team_members SET role = ? WHERE team_id = ? AND account_id = ?", [
            role,
            teamId,
            accountId,
          ]); // TEAM2
        await insertAudit(tx, {
          accountId: actorAccountId,
          action: "team.member.put",
          target: teamId,
          detail: { accountId, role, ...(old === undefined ? {} : { previousRole: old }) },
        }); // TEAM5
        return { created: old === undefined };
      });
    },

    async removeTeamMember({ teamId, accountId, actorAccountId }) {
      return driver.transaction(async (tx) => {
        await lockTeam(tx, teamId);
        const old = await roleIn(tx, teamId, accountId);
        if (old === undefined) return false;
        if (old === "owner" && (await ownerCount(tx, teamId)) <= 1) throw lastOwner(); // TEAM1
        await tx.run("DELETE FROM team_members WHERE team_id = ? AND account_id = ?", [
          teamId,
          accountId,
        ]);
        const unpublished = await tx.run(
          "UPDATE bots SET team_id = NULL, updated_at = ? WHERE account_id = ? AND team_id = ?",
          [now(), accountId, teamId],
        ); // TEAM3
        await insertAudit(tx, {
          accountId: actorAccountId,
          action: "team.member.remove",
          target: teamId,
          detail: { accountId, role: old, botsUnpublished: unpublished.changes },
        }); // TEAM5
        return true;
      });
    },

    async createTeamInvitation({
      teamId,
      role,
      tokenHash,
      expiresAt,
      actorAccountId,
      limit,
      now: at,
    }) {
      return driver.transaction(async (tx) => {
        await lockTeam(tx, teamId);
        const open = await tx.all<{ count: number | string }>(
          "SELECT COUNT(*) AS count FROM team_invitations WHERE team_id = ? AND accepted_by IS NULL AND expires_at > ?",
          [teamId, at],
        );
        if (Number(open[0]?.count ?? 0) >= limit)
          throw new RoostError(
            "conflict",
            `a team has at most ${limit} open invitation links; wait until some are used or expire (or invite with a shorter expiresInMs)`,
          ); // TEAM8
        const invitation: TeamInvitation = {
          id: ids("inv"),
          teamId,
          role,
          createdBy: actorAccountId,
          expiresAt,
          acceptedBy: null,
          acceptedAt: null,
          createdAt: now(),
        };
        await tx.run(
          `INSERT INTO team_invitations (id, team_id, token_hash, role, created_by, expires_at, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
          [invitation.id, teamId, tokenHash, role, actorAccountId, expiresAt, invitation.createdAt],
        ); // TEAM4: the hash only
        await insertAudit(tx, {
          accountId: actorAccountId,
          action: "team.invitation.create",
          target: teamId,
          detail: { invitationId: invitation.id, role, expiresAt },
        }); // TEAM5
        return invitation;
      });
    },

    async grantConsent(consent) {
      // TEAM7: a racing grant of the same key loses on the primary key; the winner's row holds.
      await grantOnce(consent).catch((error: unknown) => {
        if (!driver.isUniqueViolation(error)) throw error;
      });
    },

    async revokeConsent(consent) {
      return driver.transaction(async (tx) => {
        const deleted = await tx.run(
          `DELETE FROM credential_consents
           WHERE bot_id = ? AND place_id = ? AND owner_account_id = ? AND kind = ? AND name = ?`,
          [consent.botId, consent.placeId, consent.ownerAccountId, consent.kind, consent.name],
        );
        if (deleted.changes === 0) return false;
        await insertAudit(tx, {
          accountId: consent.ownerAccountId,
          action: "consent.revoke",
          target: consent.botId,
          detail: { placeId: consent.placeId, kind: consent.kind, name: consent.name },
        }); // TEAM7
        return true;
      });
    },

    async listConsents(filter) {
      const rows =
        "ownerAccountId" in filter
          ? await driver.all<ConsentRow>(
              "SELECT * FROM credential_consents WHERE owner_account_id = ? ORDER BY granted_at, name",
              [filter.ownerAccountId],
            )
          : filter.placeId === undefined
            ? await driver.all<ConsentRow>(
                "SELECT * FROM credential_consents WHERE bot_id = ? ORDER BY granted_at, name",
                [filter.botId],
              )
            : await driver.all<ConsentRow>(
                "SELECT * FROM credential_consents WHERE bot_id = ? AND place_id = ? ORDER BY granted_at, name",
                [filter.botId, filter.placeId],
              );
      return rows.map((row) => ({
        botId: row.bot_id,
        placeId: row.place_id,
        ownerAccountId: row.owner_account_id,
        kind: row.kind,
        name: row.name,
        grantedAt: Number(row.granted_at),
      }));
    },

    async botOfSharedAccount(accountId) {
      const rows = await driver.all<{ bot_id: string }>(
        "SELECT bot_id FROM bot_shared_accounts WHERE account_id = ?",
        [accountId],
      );
      return rows[0]?.bot_id;
    },

    async ensureBotSharedAccount({ botId, botName }) {
      const existing = async () =>
        (
          await driver.all<{ account_id: string }>(
            "SELECT account_id FROM bot_shared_accounts WHERE bot_id = ?",
            [botId],
          )
        )[0]?.account_id;
      const found = await existing();
      if (found !== undefined) return found;
      try {
        return await driver.transaction(async (tx) => {
          const accountId = ids("acct");
          const at = now();
          await tx.run(
            "INSERT INTO accounts (id, name, is_admin, created_at) VALUES (?, ?, 0, ?)",
            [accountId, `shared computer of ${botName}`, at],
          );
          await tx.run(
            "INSERT INTO bot_shared_accounts (bot_id, account_id, created_at) VALUES (?, ?, ?)",
            [botId, accountId, at],
          );
          return accountId;
        });
      } catch (error) {
        // TEAM6: a racing first shared turn made it; its account is the one.
        if (!driver.isUniqueViolation(error)) throw error;
        const winner = await existing();
        if (winner === undefined) throw error;
        return winner;
      }
    },

    async acceptTeamInvitation({ tokenHash, accountId, now: at }) {
      return driver.transaction(async (tx) => {
        const rows = await tx.all<InvitationRow>(
          `SELECT id, team_id, role, created_by, expires_at, accepted_by, accepted_at, created_at
           FROM team_invitations WHERE token_hash = ?${driver.lockRows}`,
          [tokenHash],
        );
        const row = rows[0];
        if (row === undefined) return { outcome: "unknown" };
        const invitation = toInvitation(row);
        if (invitation.acceptedBy !== null) return { outcome: "used" };
        if (invitation.expiresAt <= at) return { outcome: "expired" };
        // TEAM4: the row is locked (Postgres) and the update is conditional, so of two racing
        // accepts exactly one changes it.
        const claimed = await tx.run(
          "UPDATE team_invitations SET accepted_by = ?, accepted_at = ? WHERE id = ? AND accepted_by IS NULL",
          [accountId, at, invitation.id],
        );
        if (claimed.changes === 0) return { outcome: "used" };
        await lockTeam(tx, invitation.teamId);
        const old = await roleIn(tx, invitation.teamId, accountId);
        const role =
          old !== undefined && rank[old] >= rank[invitation.role] ? old : invitation.role;
        if (old === undefined)
          await tx.run(
            "INSERT INTO team_members (team_id, account_id, role, created_at) VALUES (?, ?, ?, ?)",
            [invitation.teamId, accountId, role, at],
          );
        else if (role !== old)
          await tx.run("UPDATE team_members SET role = ? WHERE team_id = ? AND account_id = ?", [
            role,
            invitation.teamId,
            accountId,
          ]);
        await insertAudit(tx, {
          accountId,
          action: "team.invitation.accept",
          target: invitation.teamId,
          detail: { invitationId: invitation.id, role, invitedBy: invitation.createdBy },
        }); // TEAM5
        return {
          outcome: "accepted",
          teamId: invitation.teamId,
          role,
          alreadyMember: old !== undefined,
        };
      });
    },
  };
}
