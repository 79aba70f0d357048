/**
 * The row that shows the model thinking before its first token (issue 16 §2): the three dots,
 * "Thinking…" and the seconds since it began. It is shown from the moment the bot owes an answer
 * until the first streamed text (or a tool card) takes its place, and its clock starts when it
 * appears, so a reload mid-think counts from the reload, never from a skewed server clock.
 */
import { useEffect, useState } from "react";
import { Avatar } from "./ui.tsx";

/** "Thinking…", then "Thinking… 3 s", "Thinking… 1 min 5 s". */
export function thinkingLabel(elapsedMs: number): string {
  const seconds = Math.floor(elapsedMs / 1000);
  if (seconds < 1) return "Thinking…";
  if (seconds < 60) return `Thinking… ${seconds} s`;
  return `Thinking… ${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

export function ThinkingRow({ botName }: { botName: string }) {
  const [startedAt] = useState(() => Date.now());
  const [now, setNow] = useState(startedAt);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return (
    <div className="row row-bot row-thinking" data-testid="thinking">
      <Avatar name={botName} size="sm" />
      <span className="thinking" aria-hidden="true">
        <span />
        <span />
        <span />
      </span>
      <span className="thinking-label" role="timer">
        {thinkingLabel(now - startedAt)}
      </span>
    </div>
  );
}
