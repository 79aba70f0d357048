/**
 * A bot's start page: a new chat with it (the conversation is created with the first message, or
 * with the first attached file, which needs a conversation to belong to).
 */
import { useEffect, useRef, useState } from "react";
import { ApiError } from "../api/client.ts";
import type { Conversation } from "../api/types.ts";
import { navigate, paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
import { ComputerControls } from "./computer.tsx";
import { Composer } from "./composer.tsx";
import { useUploads } from "./upload.tsx";
import { MemoryLink } from "./memory-link.tsx";
import { UsageLink } from "./usage-panel.tsx";
import { Avatar, BotNotFound, EditBotLink, Header, ModelBadge } from "./ui.tsx";

export function NewChat({ botId, onMenu }: { botId: string; onMenu(): void }) {
  const { api, bots, feed, upsertConversation } = useSession();
  const bot = bots?.find((candidate) => candidate.id === botId);
  const [error, setError] = useState<string>();
  // Made when the first file is attached (uploads belong to a conversation), used by the send.
  const made = useRef<{ botId: string; conversation: Promise<Conversation> }>(undefined);
  const conversationFor = () => {
    if (made.current?.botId !== botId)
      made.current = { botId, conversation: api.createConversation(botId) };
    return made.current.conversation;
  };
  const uploads = useUploads(async () => (await conversationFor()).id);
  const { clear } = uploads;
  useEffect(() => clear(), [botId, clear]); // another bot's page: its own files

  if (bots !== undefined && bot === undefined) {
    return (
      <>
        <Header title="Bot not found" onMenu={onMenu} />
        <BotNotFound />
      </>
    );
  }

  const send = async (text: string, attachments: string[] = []) => {
    setError(undefined);
    try {
      // No title: the server makes one from the first message (docs/chat.md "Titles").
      const conversation = await conversationFor();
      upsertConversation(conversation);
      const opened = feed(conversation.id);
      await opened.ready();
      void opened.send(text, attachments);
      made.current = undefined;
      navigate(paths.conversation(conversation.id));
    } catch (caught) {
      setError(
        caught instanceof ApiError || caught instanceof Error ? caught.message : String(caught),
      );
      throw caught;
    }
  };

  const suggestions =
    bot?.isDemo === true
      ? ["Hello! What can you do?", "$ uname -a", "$ ls -la /workspace"]
      : ["What can you do?", "Summarise what's in /workspace"];

  return (
    <>
      <Header
        title={bot?.name ?? "…"}
        subtitle={bot !== undefined ? <ModelBadge bot={bot} /> : undefined}
        onMenu={onMenu}
      >
        <ComputerControls />
        {bot !== undefined && <MemoryLink bot={bot} />}
        {bot !== undefined && <UsageLink bot={bot} />}
        {bot !== undefined && <EditBotLink bot={bot} />}
      </Header>
      <div className="timeline-wrap">
        <div className="timeline">
          <div className="timeline-inner new-chat-hero">
            {bot !== undefined && <Avatar name={bot.name} size="lg" />}
            <h2>New chat{bot !== undefined ? ` with ${bot.name}` : ""}</h2>
            {bot !== undefined && bot.instructions.trim() !== "" && (
              <p className="muted hero-instructions">{bot.instructions}</p>
            )}
            {bot?.isDemo === true && (
              <p className="notice notice-info">
                This bot uses the offline <strong>demo model</strong>: it repeats what you say, and
                a message starting with <code>$ </code> runs that command on your computer.
              </p>
            )}
            <div className="suggestions">
              {suggestions.map((suggestion) => (
                <button
                  key={suggestion}
                  type="button"
                  className="suggestion"
                  onClick={() => void send(suggestion).catch(() => undefined)}
                >
                  {suggestion}
                </button>
              ))}
            </div>
            {error !== undefined && (
              <p className="notice notice-error" role="alert">
                {error}
              </p>
            )}
          </div>
        </div>
      </div>
      <Composer
        draftKey={`new-${botId}`}
        placeholder={`Message ${bot?.name ?? "the bot"}…`}
        onSend={send}
        uploads={uploads}
      />
    </>
  );
}
