/** The signed-in layout: a sidebar of bots and chats, and the routed view beside it. */
import { Suspense, useCallback, useEffect, useState } from "react";
import { navigate, paths, useRoute } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
// Each screen is its own chunk (screens.tsx): the first load stays within its budget.
import {
  BotForm,
  ChatView,
  MemoryPanel,
  NewChat,
  SettingsPage,
  SkillPage,
  SkillsPage,
  SlackLinkPage,
  TeamJoinPage,
  TeamsPage,
  UsagePanel,
} from "./screens.tsx";
import { Sidebar } from "./sidebar.tsx";
import { Switcher } from "./switcher.tsx";
import { EmptyState, Header } from "./ui.tsx";

export function Shell() {
  const route = useRoute();
  const { bots, conversations, botsError } = useSession();
  const [navOpen, setNavOpen] = useState(false);
  const openNav = useCallback(() => setNavOpen(true), []);
  const closeNav = useCallback(() => setNavOpen(false), []);

  useEffect(() => {
    if (!navOpen) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") setNavOpen(false);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [navOpen]);

  // Home: the newest conversation, else the first bot, else "create your first bot".
  useEffect(() => {
    if (route.name !== "home" || bots === undefined || conversations === undefined) return;
    const newest = conversations.find((conversation) =>
      bots.some((bot) => bot.id === conversation.botId),
    );
    if (newest !== undefined) navigate(paths.conversation(newest.id), { replace: true });
    else if (bots[0] !== undefined) navigate(paths.bot(bots[0].id), { replace: true });
  }, [route.name, bots, conversations]);

  const selectedBotId =
    route.name === "bot" ||
    route.name === "edit-bot" ||
    route.name === "bot-memory" ||
    route.name === "bot-usage"
      ? route.botId
      : route.name === "conversation"
        ? conversations?.find((conversation) => conversation.id === route.conversationId)?.botId
        : undefined;

  let view: React.ReactNode;
  switch (route.name) {
    case "home":
      view =
        bots !== undefined && bots.length === 0 ? (
          <>
            <Header title="Welcome to Roost" onMenu={openNav} />
            <div className="page">
              <div className="welcome">
                <h2>Create your first bot</h2>
                <p className="muted">
                  A bot has a name, instructions and a model. It works on your own computer, and you
                  can talk to it here.
                </p>
                <BotForm mode="create" />
              </div>
            </div>
          </>
        ) : (
          <>
            <Header title="Roost" onMenu={openNav} />
            <EmptyState
              title={botsError === undefined ? "Loading…" : "Could not load your bots"}
              detail={botsError}
            />
          </>
        );
      break;
    case "new-bot":
      view = (
        <>
          <Header title="New bot" onMenu={openNav} />
          <div className="page">
            <BotForm mode="create" />
          </div>
        </>
      );
      break;
    case "edit-bot":
      view = <BotForm mode="edit" botId={route.botId} onMenu={openNav} />;
      break;
    case "bot":
      view = <NewChat key={route.botId} botId={route.botId} onMenu={openNav} />;
      break;
    case "bot-memory":
      view = <MemoryPanel botId={route.botId} tab={route.tab} onMenu={openNav} />;
      break;
    case "bot-usage":
      view = <UsagePanel key={route.botId} botId={route.botId} onMenu={openNav} />;
      break;
    case "conversation":
      view = (
        <ChatView
          key={route.conversationId}
          conversationId={route.conversationId}
          onMenu={openNav}
        />
      );
      break;
    case "skills":
      view = <SkillsPage onMenu={openNav} />;
      break;
    case "skill":
      view = <SkillPage key={route.skillName} name={route.skillName} onMenu={openNav} />;
      break;
    case "teams":
      view = <TeamsPage onMenu={openNav} />;
      break;
    case "team-join":
      view = <TeamJoinPage onMenu={openNav} />;
      break;
    case "settings":
      view = <SettingsPage section={route.section} onMenu={openNav} />;
      break;
    case "slack-link":
      view = <SlackLinkPage onMenu={openNav} />;
      break;
    case "not-found":
      view = (
        <>
          <Header title="Not found" onMenu={openNav} />
          <EmptyState
            title="There is nothing at this address"
            detail={`${route.path} is not a page of Roost.`}
          >
            <a
              className="button"
              href="/"
              onClick={(event) => (event.preventDefault(), navigate(paths.home))}
            >
              Go to your bots
            </a>
          </EmptyState>
        </>
      );
      break;
  }

  return (
    <div className="app" data-nav-open={navOpen ? "" : undefined}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <aside className="sidebar" aria-label="Bots and chats">
        <Sidebar selectedBotId={selectedBotId} onNavigate={closeNav} onClose={closeNav} />
      </aside>
      <div className="scrim" onClick={closeNav} aria-hidden="true" />
      <main className="main" id="main">
        <Suspense
          fallback={
            <>
              <Header title="Roost" onMenu={openNav} />
              <EmptyState title="Loading…" />
            </>
          }
        >
          {view}
        </Suspense>
      </main>
      <Switcher />
    </div>
  );
}
