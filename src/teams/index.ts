/**
 * teams/: teams of accounts, team bots, and who a conversation acts as (docs/teams.md, decision
 * 0029). The store keeps teams (store/team-types.ts); this folder decides access and roles.
 */
export { botAccessOf, mayUseConversation, usableBotOf, type BotAccess } from "./access.ts";
export { mayChangeMember, mayInvite, mayPublish } from "./roles.ts";
export { routeTurn, teamShouldKnowPattern } from "./routing.ts";
export { createConsentHooks, secretConsentKind } from "./consent.ts";
