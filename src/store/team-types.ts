/**
 * Teams as the store keeps them (issue 14 §1, docs/teams.md): teams, their members with a role,
 * and one-time invitations.
 *
 * Invariants (both implementations; checked by team-store.test.ts):
 *   TEAM1 a team always has at least one owner: demoting or removing the last owner is refused
 *         (a `conflict`), also when two owners race to leave (the team's row is locked while
 *         the owners are counted).
 *   TEAM2 one membership per (team, account): adding an existing member changes their role.
 *   TEAM3 a member who leaves takes their bots out of the team in the same transaction, so no
 *         team bot has an owner outside its team.
 *   TEAM4 an invitation is kept only as its token's SHA-256 hash and is accepted at most once,
 *         also under concurrent accepts; an expired one is never accepted.
 *   TEAM5 every membership change and invitation is audited in its transaction.
 *   TEAM6 a bot has at most one shared-computer account, also when its first shared turns race;
 *         that account has no API token and belongs to no team.
 *   TEAM7 a consent is one row per (bot, place, owner, kind, name): granting twice keeps one, and
 *         granting and revoking are audited in their transaction.
 *   TEAM8 floods are bounded under concurrency: at most `limit` teams an account belongs to when it
 *         creates one (its row is locked), at most `limit` open invitations per team (the team's
 *         row is locked); past a limit the store answers a `conflict` saying what to do.
 */
import type { Actor } from "./types.ts";

export const teamRoles = ["owner", "admin", "member"] as const;
export type TeamRole = (typeof teamRoles)[number];

export interface Team {
  id: string;
  name: string;
  createdBy: string;
  createdAt: number;
}

export interface TeamMember {
  teamId: string;
  accountId: string;
  /** The account's name, for lists. */
  name: string;
  role: TeamRole;
  createdAt: number;
}

export interface TeamInvitation {
  id: string;
  teamId: string;
  /** The role the invited person gets. */
  role: TeamRole;
  createdBy: string;
  expiresAt: number;
  acceptedBy: string | null;
  acceptedAt: number | null;
  createdAt: number;
}

export type AcceptInvitationOutcome =
  | { outcome: "accepted"; teamId: string; role: TeamRole; alreadyMember: boolean }
  | { outcome: "unknown" | "used" | "expired" };

/** A person's consent to a bot using one of their credentials in one place (TEAM7). */
export interface CredentialConsent {
  botId: string;
  /** The shared conversation it holds in. */
  placeId: string;
  ownerAccountId: string;
  /** `secret` today; MCP servers and connected accounts reuse the same rows. */
  kind: string;
  name: string;
  grantedAt: number;
}

export interface TeamStore {
  /** Creates the team with `ownerAccountId` as its first owner; audits `team.create`. */
  createTeam(input: { name: string; ownerAccountId: string; limit: number }): Promise<Team>;
  getTeam(id: string): Promise<Team | undefined>;
  /** The teams the account belongs to, with its role in each, oldest first. */
  listTeamsOf(accountId: string): Promise<(Team & { role: TeamRole })[]>;
  listTeamMembers(teamId: string): Promise<TeamMember[]>;
  /** The account's role in the team; undefined when it is not a member. */
  getTeamRole(teamId: string, accountId: string): Promise<TeamRole | undefined>;
  /** TEAM1, TEAM2, TEAM5: adds the member or changes their role; audits `team.member.put`. */
  putTeamMember(
    input: { teamId: string; accountId: string; role: TeamRole } & Actor,
  ): Promise<{ created: boolean }>;
  /**
   * TEAM1, TEAM3, TEAM5: removes the member (false when they were not one), unpublishes their
   * bots from the team, audits `team.member.remove`.
   */
  removeTeamMember(input: { teamId: string; accountId: string } & Actor): Promise<boolean>;
  /** TEAM4, TEAM5: pass the token's hash; audits `team.invitation.create`. */
  createTeamInvitation(input: {
    teamId: string;
    role: TeamRole;
    tokenHash: string;
    expiresAt: number;
    actorAccountId: string;
    /** TEAM8: open (unused, unexpired at `now`) invitations the team may have. */
    limit: number;
    now: number;
  }): Promise<TeamInvitation>;
  /**
   * TEAM4, TEAM5: accepts the invitation with this token hash for `accountId` at `now` and makes
   * it a member (an existing member keeps the higher of its role and the invited one).
   */
  /** TEAM7: audits `consent.grant` (once: a repeat changes nothing). */
  grantConsent(input: Omit<CredentialConsent, "grantedAt">): Promise<void>;
  /** TEAM7: false when there was none; audits `consent.revoke`. */
  revokeConsent(input: Omit<CredentialConsent, "grantedAt">): Promise<boolean>;
  /** The consents that hold in a place, in all of a bot's places, or all of an owner's. */
  listConsents(
    filter: { botId: string; placeId?: string } | { ownerAccountId: string },
  ): Promise<CredentialConsent[]>;
  /** The bot whose shared computer this account owns (TEAM6), if it is one. */
  botOfSharedAccount(accountId: string): Promise<string | undefined>;
  /** TEAM6: the account whose computer is the bot's shared computer, made on first use. */
  ensureBotSharedAccount(input: { botId: string; botName: string }): Promise<string>;
  acceptTeamInvitation(input: {
    tokenHash: string;
    accountId: string;
    now: number;
  }): Promise<AcceptInvitationOutcome>;
}
