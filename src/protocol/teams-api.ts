/**
 * Wire types of the teams API (docs/api.md "Teams", docs/teams.md), part of `Api` (api.ts
 * re-exports them). Depends on nothing.
 */

export type TeamRole = "owner" | "admin" | "member";

export interface Team {
  id: string;
  name: string;
  /** The caller's role in it. */
  role: TeamRole;
  createdAt: string;
}

export interface TeamMember {
  accountId: string;
  name: string;
  role: TeamRole;
  joinedAt: string;
}

export interface TeamDetail extends Team {
  members: TeamMember[];
}

export interface TeamList {
  teams: Team[];
}

/** `POST /v1/teams/{id}/invitations`: the token is shown once and stored only as its hash. */
export interface CreatedInvitation {
  id: string;
  teamId: string;
  role: TeamRole;
  /** The link to hand on; the token is in its fragment, so it reaches no server log. */
  url: string;
  token: string;
  expiresAt: string;
}

/** `POST /v1/invitations/{token}/accept`. */
export interface AcceptedInvitation {
  team: Team;
  /** The caller was a member already (they keep the higher role). */
  alreadyMember: boolean;
}

/**
 * Where a conversation happens: `direct` is one person's own chat (web, CLI, a 1:1 DM) and runs on
 * that person's computer with their accounts; `shared` is a channel, group DM or thread and runs
 * on the bot's shared computer with the bot's own credentials.
 */
export type ConversationPlace = "direct" | "shared";

/** A bot's team marker in `GET /v1/bots`. */
export interface BotTeam {
  id: string;
  name: string;
}

/** A consent the caller gave: a bot may use their credential in one shared place. */
export interface Consent {
  botId: string;
  /** The shared conversation it holds in. */
  placeId: string;
  /** `secret` today. */
  kind: string;
  name: string;
  grantedAt: string;
}

/** `GET /v1/me/consents`. */
export interface ConsentList {
  consents: Consent[];
}
