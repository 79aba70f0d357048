/**
 * Teams (docs/api.md "Teams", docs/teams.md): teams, their members, invitation links.
 *
 * Invariants:
 *   TAPI1 a team is visible only to its members: to anyone else its id answers 404 exactly like a
 *         missing one, on every route (reads, writes, invitations).
 *   TAPI2 what a member may change follows their role (teams/roles.ts TROLE1–TROLE4); a member
 *         who may see the team but not make the change gets 403 saying who can.
 *   TAPI3 an invitation token is shown once (the store keeps its hash), works once, expires, and
 *         every way it fails (unknown, used, expired) answers the same 404, so a guessed or stale
 *         token tells nothing; the accepting account comes from the API token, never the body.
 *   TAPI4 bad input is a 400 that says how to fix it and stores nothing.
 */
import { randomBytes } from "node:crypto";
import type { Context, Hono } from "hono";
import { z } from "zod";
import { hashToken } from "../auth/index.ts";
import { NotFoundError, RoostError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Account, Store, Team, TeamMember, TeamRole } from "../store/index.ts";
import { mayChangeMember, mayInvite } from "../teams/index.ts";
import { readJson, refuseBody, text } from "./validation.ts";

/** TEAM8 @default 50 */
export const maxTeamsPerAccount = 50;
/** TEAM8 @default 100 */
export const maxOpenInvitationsPerTeam = 100;
/** How long an invitation link works unless the request says otherwise. @default 7 days */
export const defaultInvitationTtlMs = 7 * 24 * 60 * 60 * 1000;
const maxInvitationTtlMs = 30 * 24 * 60 * 60 * 1000;

const role = z.enum(["owner", "admin", "member"], {
  error: 'role must be "owner", "admin" or "member"',
});
const accountId = text("accountId", { min: 1, max: 100 });
const createTeamBody = z.strictObject({ name: text("name", { min: 1, max: 80 }) });
const putMemberBody = z.strictObject({ accountId, role });
const removeMemberBody = z.strictObject({ accountId });
const createInvitationBody = z
  .strictObject({
    role: role.optional(),
    expiresInMs: z
      .number({ error: "expiresInMs must be a number of milliseconds" })
      .int({ error: "expiresInMs must be a whole number of milliseconds" })
      .min(60_000, { error: "expiresInMs must be at least 60000 (one minute)" })
      .max(maxInvitationTtlMs, {
        error: `expiresInMs must be at most ${maxInvitationTtlMs} (30 days)`,
      })
      .optional(),
  })
  .optional();
const tokenPattern = /^rti_[A-Za-z0-9_-]{43}$/;
const revokeConsentBody = z.strictObject({
  botId: text("botId", { min: 1, max: 100 }),
  placeId: text("placeId", { min: 1, max: 100 }),
  kind: text("kind", { min: 1, max: 40 }),
  name: text("name", { min: 1, max: 200 }),
});

type TeamsApp = Hono<{ Variables: { account: Account } }>;
type TeamsContext = Context<{ Variables: { account: Account } }>;

const iso = (epochMs: number) => new Date(epochMs).toISOString();
const teamView = (team: Team, callerRole: TeamRole): Api.Team => ({
  id: team.id,
  name: team.name,
  role: callerRole,
  createdAt: iso(team.createdAt),
});
const memberView = (member: TeamMember): Api.TeamMember => ({
  accountId: member.accountId,
  name: member.name,
  role: member.role,
  joinedAt: iso(member.createdAt),
});

export function registerTeamRoutes(
  app: TeamsApp,
  deps: { store: Store; clock: () => number; publicUrl?: string },
): void {
  const { store, clock } = deps;

  /** TAPI1: the team and the caller's role in it; 404 when the caller is not a member. */
  const myTeam = async (context: TeamsContext) => {
    const id = context.req.param("id") ?? "";
    const caller = context.get("account").id;
    const team = await store.getTeam(id);
    const callerRole = team === undefined ? undefined : await store.getTeamRole(team.id, caller);
    if (team === undefined || callerRole === undefined) throw new NotFoundError("team", id);
    return { team, callerRole, caller };
  };
  const forbidden = (message: string) => new RoostError("forbidden", message);

  app.post("/v1/teams", async (context) => {
    const body = await readJson(context, createTeamBody); // TAPI4
    const team = await store.createTeam({
      name: body.name,
      ownerAccountId: context.get("account").id,
      limit: maxTeamsPerAccount,
    });
    return context.json(
      {
        ...teamView(team, "owner"),
        members: memberViews(await store.listTeamMembers(team.id)),
      } satisfies Api.TeamDetail,
      201,
    );
  });

  app.get("/v1/teams", async (context) => {
    const teams = await store.listTeamsOf(context.get("account").id);
    return context.json({
      teams: teams.map((team) => teamView(team, team.role)),
    } satisfies Api.TeamList);
  });

  app.get("/v1/teams/:id", async (context) => {
    const { team, callerRole } = await myTeam(context); // TAPI1
    return context.json({
      ...teamView(team, callerRole),
      members: memberViews(await store.listTeamMembers(team.id)),
    } satisfies Api.TeamDetail);
  });

  app.post("/v1/teams/:id/members", async (context) => {
    const { team, callerRole, caller } = await myTeam(context); // TAPI1 before the body
    const body = await readJson(context, putMemberBody); // TAPI4
    if ((await store.getAccount(body.accountId)) === undefined)
      throw new NotFoundError("account", body.accountId);
    const current = await store.getTeamRole(team.id, body.accountId);
    if (
      !mayChangeMember(
        { accountId: caller, role: callerRole },
        { accountId: body.accountId, role: current },
        body.role,
      )
    )
      throw forbidden(
        callerRole === "member"
          ? "only a team's owners and admins add members; ask one of them"
          : "only an owner adds, changes or removes an owner; ask one of the team's owners",
      ); // TAPI2
    const { created } = await store.putTeamMember({
      teamId: team.id,
      accountId: body.accountId,
      role: body.role,
      actorAccountId: caller,
    });
    return context.json(
      { members: memberViews(await store.listTeamMembers(team.id)) },
      created ? 201 : 200,
    );
  });

  // The member goes in the body, as issue 14 names it: `DELETE /v1/teams/{id}/members`
  // {"accountId"}; leaving is the same call with one's own id.
  app.delete("/v1/teams/:id/members", async (context) => {
    const { team, callerRole, caller } = await myTeam(context); // TAPI1
    const body = await readJson(context, removeMemberBody); // TAPI4
    const current = await store.getTeamRole(team.id, body.accountId);
    if (current === undefined) throw new NotFoundError("team member", body.accountId);
    if (
      !mayChangeMember(
        { accountId: caller, role: callerRole },
        { accountId: body.accountId, role: current },
        undefined,
      )
    )
      throw forbidden(
        callerRole === "member"
          ? "a member may remove only themselves (leave); ask an owner or admin to remove someone"
          : "only an owner removes an owner; ask one of the team's owners",
      ); // TAPI2
    await store.removeTeamMember({
      teamId: team.id,
      accountId: body.accountId,
      actorAccountId: caller,
    }); // TROLE4: the last owner is a 409 from the store
    return context.body(null, 204);
  });

  app.post("/v1/teams/:id/invitations", async (context) => {
    const { team, callerRole, caller } = await myTeam(context); // TAPI1
    const body =
      context.req.header("content-type") === undefined
        ? undefined
        : await readJson(context, createInvitationBody); // TAPI4
    const invitedRole = body?.role ?? "member";
    if (!mayInvite(callerRole, invitedRole))
      throw forbidden(
        callerRole === "member"
          ? "only a team's owners and admins invite people; ask one of them"
          : "only an owner invites an owner; invite as admin or member, or ask an owner",
      ); // TAPI2
    const token = `rti_${randomBytes(32).toString("base64url")}`;
    const expiresAt = clock() + (body?.expiresInMs ?? defaultInvitationTtlMs);
    const invitation = await store.createTeamInvitation({
      teamId: team.id,
      role: invitedRole,
      tokenHash: hashToken(token), // TAPI3
      expiresAt,
      actorAccountId: caller,
      limit: maxOpenInvitationsPerTeam,
      now: clock(),
    });
    const origin = (deps.publicUrl ?? new URL(context.req.url).origin).replace(/\/+$/, "");
    return context.json(
      {
        id: invitation.id,
        teamId: team.id,
        role: invitedRole,
        url: `${origin}/teams/join#${token}`,
        token,
        expiresAt: iso(expiresAt),
      } satisfies Api.CreatedInvitation,
      201,
    );
  });

  // Consents the caller gave (teams/consent.ts CONS2, CONS3): only their own, so another
  // person's consent answers 404 like a missing one.
  app.get("/v1/me/consents", async (context) => {
    const consents = await store.listConsents({ ownerAccountId: context.get("account").id });
    return context.json({
      consents: consents.map((consent) => ({
        botId: consent.botId,
        placeId: consent.placeId,
        kind: consent.kind,
        name: consent.name,
        grantedAt: iso(consent.grantedAt),
      })),
    } satisfies Api.ConsentList);
  });

  app.delete("/v1/me/consents", async (context) => {
    const body = await readJson(context, revokeConsentBody); // TAPI4
    const revoked = await store.revokeConsent({
      ...body,
      ownerAccountId: context.get("account").id,
    });
    if (!revoked)
      throw new RoostError(
        "not_found",
        "you gave no such consent (GET /v1/me/consents lists yours)",
      );
    return context.body(null, 204);
  });

  app.post("/v1/invitations/:token/accept", async (context) => {
    const token = context.req.param("token");
    await refuseBody(context, "POST /v1/invitations/{token}/accept"); // TAPI3: not from a body
    const caller = context.get("account").id;
    const invalid = new RoostError(
      "not_found",
      "this invitation link is unknown, used or expired; ask the team for a new one",
    );
    if (!tokenPattern.test(token)) throw invalid;
    const accepted = await store.acceptTeamInvitation({
      tokenHash: hashToken(token),
      accountId: caller,
      now: clock(),
    });
    if (accepted.outcome !== "accepted") throw invalid; // TAPI3: one answer for every failure
    const team = await store.getTeam(accepted.teamId);
    if (team === undefined) throw invalid;
    return context.json(
      {
        team: teamView(team, accepted.role),
        alreadyMember: accepted.alreadyMember,
      } satisfies Api.AcceptedInvitation,
      200,
    );
  });
}

const memberViews = (members: TeamMember[]) => members.map(memberView);
