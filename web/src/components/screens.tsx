/**
 * The signed-in screens, each in its own chunk (issue 16 §7: the first load stays within 100 KiB
 * gzip of JS and CSS; docs/web.md "Quality bars"). index.html loads the app shell (sign-in, the
 * sidebar, the session and its live feeds); a screen's code loads when it is first shown.
 *
 * `preloadScreen` starts the current address's chunk at start-up, alongside the sign-in check,
 * so opening the app on a conversation never waits for the check and then for the chunk in turn.
 */
import { lazy, type ComponentType } from "react";
import type { Route } from "../lib/router.ts";

type Loader<Props> = () => Promise<ComponentType<Props>>;

/** A lazy screen whose loader can also be started early (a module is fetched once either way). */
function screen<Props>(load: Loader<Props>) {
  let started: Promise<ComponentType<Props>> | undefined;
  const preload = () =>
    (started ??= load().catch((error: unknown) => {
      started = undefined; // a later render tries again
      throw error;
    }));
  const Component = lazy(async () => ({ default: await preload() }));
  return Object.assign(Component, { preload });
}

interface OnMenu {
  onMenu(): void;
}

export const ChatView = screen<{ conversationId: string } & OnMenu>(async () => {
  return (await import("./chat-view.tsx")).ChatView;
});
export const NewChat = screen<{ botId: string } & OnMenu>(async () => {
  return (await import("./new-chat.tsx")).NewChat;
});
export const BotForm = screen<React.ComponentProps<typeof import("./bot-form.tsx").BotForm>>(
  async () => (await import("./bot-form.tsx")).BotForm,
);
export const MemoryPanel = screen<
  React.ComponentProps<typeof import("./memory-panel.tsx").default>
>(async () => (await import("./memory-panel.tsx")).default);
export const UsagePanel = screen<{ botId: string } & OnMenu>(async () => {
  return (await import("./usage-panel.tsx")).UsagePanel;
});
export const SkillsPage = screen<OnMenu>(async () => (await import("./skills.tsx")).SkillsPage);
export const SkillPage = screen<{ name: string } & OnMenu>(async () => {
  return (await import("./skills.tsx")).SkillPage;
});
export const TeamsPage = screen<OnMenu>(async () => (await import("./teams.tsx")).TeamsPage);
export const TeamJoinPage = screen<OnMenu>(async () => {
  return (await import("./teams.tsx")).TeamJoinPage;
});
export const SettingsPage = screen<React.ComponentProps<typeof import("./settings.tsx").default>>(
  async () => (await import("./settings.tsx")).default,
);
export const SlackLinkPage = screen<OnMenu>(async () => {
  return (await import("./slack-link.tsx")).SlackLinkPage;
});

/** Starts loading the code of the screen `route` shows; failures surface when it renders. */
export function preloadScreen(route: Route): void {
  const started: Promise<unknown> | undefined = (() => {
    switch (route.name) {
      case "home": // usually opens the newest conversation
      case "conversation":
        return ChatView.preload();
      case "bot":
        return NewChat.preload();
      case "new-bot":
      case "edit-bot":
        return BotForm.preload();
      case "bot-memory":
        return MemoryPanel.preload();
      case "bot-usage":
        return UsagePanel.preload();
      case "skills":
        return SkillsPage.preload();
      case "skill":
        return SkillPage.preload();
      case "teams":
        return TeamsPage.preload();
      case "team-join":
        return TeamJoinPage.preload();
      case "settings":
        return SettingsPage.preload();
      case "slack-link":
        return SlackLinkPage.preload();
      case "not-found":
        return undefined;
    }
  })();
  started?.catch(() => undefined); // the screen's Suspense boundary shows the failure
}
