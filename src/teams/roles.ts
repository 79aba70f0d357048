/**
 * Who in a team may do what (docs/teams.md "Roles"), decided in one place.
 *
 *   TROLE1 any member reads the team and its members, uses its team bots, and may leave.
 *   TROLE2 an admin adds, re-roles and removes members and admins, and invites them; only an
 *          owner touches an owner (adds, demotes, removes one) or invites one.
 *   TROLE3 owners and admins publish their own bots to the team; a member may not.
 *   TROLE4 the last owner cannot leave or be demoted (the store's TEAM1).
 */
import type { TeamRole } from "../store/index.ts";

const rank: Record<TeamRole, number> = { owner: 3, admin: 2, member: 1 };

/** TROLE2: may `actor` give `target` the role `next` (undefined: remove them)? */
export function mayChangeMember(
  actor: { accountId: string; role: TeamRole },
  target: { accountId: string; role: TeamRole | undefined },
  next: TeamRole | undefined,
): boolean {
  if (next === undefined && target.accountId === actor.accountId) return true; // TROLE1: leave
  if (actor.role === "owner") return true;
  if (actor.role !== "admin") return false;
  return target.role !== "owner" && next !== "owner";
}

/** TROLE2: may `actor` invite someone as `role`? */
export function mayInvite(actor: TeamRole, role: TeamRole): boolean {
  return actor === "owner" || (actor === "admin" && role !== "owner");
}

/** TROLE3 */
export function mayPublish(actor: TeamRole): boolean {
  return rank[actor] >= rank.admin;
}
