/**
 * `/slack/link#<token>` (docs/slack.md "Linking"): the page a Slack person's sign-in link opens.
 * Opening it for the signed-in account shows a code that the same Slack person sends to the bot
 * to finish; the token never leaves the fragment until the person asks.
 */
import { Link2 } from "lucide-react";
import { useState } from "react";
import type { SlackPersonOpened } from "../api/types.ts";
import { useSession } from "../state/session.tsx";
import { messageOf } from "./memory-shared.ts";
import { EmptyState, Header } from "./ui.tsx";

export function SlackLinkPage({ onMenu }: { onMenu(): void }) {
  const { api, me } = useSession();
  const token = window.location.hash.replace(/^#/, "");
  const [state, setState] = useState<
    "ready" | "opening" | { opened: SlackPersonOpened } | { error: string }
  >("ready");

  const open = async () => {
    setState("opening");
    try {
      const opened = await api.openSlackLink(token);
      window.history.replaceState(null, "", window.location.pathname); // the token is spent
      setState({ opened });
    } catch (caught) {
      setState({ error: messageOf(caught) });
    }
  };

  return (
    <>
      <Header title="Link your Slack account" onMenu={onMenu} />
      <div className="page">
        {typeof state === "object" && "opened" in state ? (
          <section aria-label="Finish in Slack">
            <p>
              Last step: send this to the bot in Slack, from the same Slack account, before{" "}
              {new Date(state.opened.expiresAt).toLocaleTimeString()}:
            </p>
            <p>
              <code aria-label="Message to send">confirm {state.opened.code}</code>
            </p>
            <p>
              Then your DMs with the bot are your own chat in Roost, on your computer, as {me.name}.
            </p>
          </section>
        ) : token === "" ? (
          <EmptyState
            title="This link has no sign-in token in it"
            detail="Open the whole link the bot sent you (it ends with #rsl_…), or send the bot `link` for a new one."
          />
        ) : (
          <>
            <p>
              A Slack account asked to be linked to your Roost account ({me.name}). Only continue if
              you asked the bot for this link yourself.
            </p>
            <button
              type="button"
              className="button button-primary"
              disabled={state === "opening"}
              onClick={() => void open()}
            >
              <Link2 size={16} aria-hidden="true" /> Link my Slack account
            </button>
            {typeof state === "object" && "error" in state && (
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
