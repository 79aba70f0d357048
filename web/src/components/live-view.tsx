/**
 * The live view of a bot's screen (docs/live-view.md): noVNC over the server's VNC WebSocket,
 * view-only until the person takes control. The server enforces view-only (it drops a viewer's
 * input without the lease); the page's flag only keeps noVNC from sending it.
 */
import { Hand, MonitorPlay, RefreshCw, Undo2 } from "lucide-react";
import { useCallback, useEffect, useRef, useState } from "react";
import { ApiError } from "../api/client.ts";
import type { Screen, ScreenControl, ScreenList, ScreenViewer } from "../api/types.ts";
import { useSession } from "../state/session.tsx";

const screensRefreshMs = 5000;

/** The screen of `botId` on the account's computer, asked again every few seconds. */
function useScreen(botId: string): { screen: Screen | undefined; problem: string | undefined } {
  const { api } = useSession();
  const [screen, setScreen] = useState<Screen>();
  const [problem, setProblem] = useState<string>();
  useEffect(() => {
    const controller = new AbortController();
    const load = async () => {
      try {
        const response = await api.send("GET", "/v1/computers/me/screens", {
          signal: controller.signal,
        });
        const list = (await response.json()) as ScreenList;
        setScreen(list.screens.find((each) => each.botId === botId));
        setProblem(undefined);
      } catch (error) {
        if (controller.signal.aborted) return;
        setProblem(error instanceof ApiError ? error.message : String(error));
      }
    };
    void load();
    const timer = setInterval(() => void load(), screensRefreshMs);
    return () => {
      controller.abort();
      clearInterval(timer);
    };
  }, [api, botId]);
  return { screen, problem };
}

function secondsLeft(until: string | undefined, now: number): number {
  return until === undefined ? 0 : Math.max(0, Math.round((Date.parse(until) - now) / 1000));
}

/** A bot's screen, watched live; `compact` for the tile on a tool card (no controls). */
export function LiveView({ botId, compact = false }: { botId: string; compact?: boolean }) {
  const { api } = useSession();
  const { screen, problem } = useScreen(botId);
  const target = useRef<HTMLDivElement>(null);
  const rfbRef = useRef<{ viewOnly: boolean; disconnect(): void }>(undefined);
  const [viewerId, setViewerId] = useState<string>();
  const [status, setStatus] = useState<"connecting" | "connected" | "closed">("connecting");
  const [attempt, setAttempt] = useState(0);
  const [lease, setLease] = useState<string>();
  const [controlProblem, setControlProblem] = useState<string>();
  const [now, setNow] = useState(Date.now());
  const screenId = screen?.id;

  useEffect(() => {
    if (screenId === undefined || target.current === null) return;
    let cancelled = false;
    const element = target.current;
    setStatus("connecting");
    void (async () => {
      try {
        const viewer = (await (
          await api.send("POST", `/v1/computers/me/screens/${encodeURIComponent(screenId)}/viewers`)
        ).json()) as ScreenViewer;
        const { default: RFB } = await import("@novnc/novnc");
        if (cancelled) return;
        const scheme = location.protocol === "https:" ? "wss" : "ws";
        const rfb = new RFB(element, `${scheme}://${location.host}${viewer.path}`, {
          shared: true,
        });
        rfb.viewOnly = true;
        rfb.scaleViewport = true;
        rfb.addEventListener("connect", () => setStatus("connected"));
        rfb.addEventListener("disconnect", () => setStatus("closed"));
        rfbRef.current = rfb;
        setViewerId(viewer.viewerId);
      } catch {
        if (!cancelled) setStatus("closed");
      }
    })();
    return () => {
      cancelled = true;
      rfbRef.current?.disconnect();
      rfbRef.current = undefined;
      setViewerId(undefined);
      setLease(undefined);
    };
  }, [api, screenId, attempt]);

  // Ours while our lease runs, unless the server says another viewer holds the screen now.
  const mine =
    lease !== undefined && (screen?.controller == null || screen.controller.viewerId === viewerId);
  useEffect(() => {
    if (rfbRef.current !== undefined) rfbRef.current.viewOnly = !mine;
  }, [mine]);
  useEffect(() => {
    if (lease === undefined) return;
    const timer = setInterval(() => {
      setNow(Date.now());
      if (Date.parse(lease) <= Date.now()) setLease(undefined);
    }, 1000);
    return () => clearInterval(timer);
  }, [lease]);

  const take = useCallback(async () => {
    if (screenId === undefined || viewerId === undefined) return;
    setControlProblem(undefined);
    try {
      const control = (await (
        await api.send("POST", `/v1/computers/me/screens/${encodeURIComponent(screenId)}/control`, {
          json: { viewerId },
        })
      ).json()) as ScreenControl;
      setLease(control.controller.until);
      setNow(Date.now());
    } catch (error) {
      setControlProblem(error instanceof ApiError ? error.message : String(error));
    }
  }, [api, screenId, viewerId]);

  const handBack = useCallback(async () => {
    if (screenId === undefined) return;
    setLease(undefined);
    try {
      await api.send("DELETE", `/v1/computers/me/screens/${encodeURIComponent(screenId)}/control`);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404))
        setControlProblem(error instanceof ApiError ? error.message : String(error));
    }
  }, [api, screenId]);

  if (screen === undefined)
    return compact ? null : (
      <div className="live-view live-view-empty" role="status">
        <MonitorPlay size={18} aria-hidden="true" />
        <span>
          {problem ??
            "No screen yet: the bot's screen appears with its first browser or computer step, while the computer is awake."}
        </span>
      </div>
    );

  const left = secondsLeft(lease, now);
  const someoneElse = screen.controller !== null && screen.controller.viewerId !== viewerId;
  return (
    <div
      className={`live-view${compact ? " live-view-compact" : ""}`}
      data-status={status}
      data-control={mine ? "mine" : "view-only"}
    >
      <div className="live-view-screen" ref={target} aria-label={`${botId}'s screen`} />
      {!compact && (
        <div className="live-view-bar">
          <span className="live-view-state">
            {status === "connected"
              ? mine
                ? `You have control · ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")} left`
                : someoneElse
                  ? "Another window has control"
                  : screen.busy
                    ? "Watching · the bot is working"
                    : "Watching"
              : status === "connecting"
                ? "Connecting…"
                : "Disconnected"}
          </span>
          {status === "closed" && (
            <button
              type="button"
              className="button button-small"
              onClick={() => setAttempt((n) => n + 1)}
            >
              <RefreshCw size={14} aria-hidden="true" /> Reconnect
            </button>
          )}
          {status === "connected" && !mine && (
            <button type="button" className="button button-small" onClick={() => void take()}>
              <Hand size={14} aria-hidden="true" /> Take control
            </button>
          )}
          {status === "connected" && mine && (
            <>
              <button type="button" className="button button-small" onClick={() => void take()}>
                <RefreshCw size={14} aria-hidden="true" /> Renew
              </button>
              <button type="button" className="button button-small" onClick={() => void handBack()}>
                <Undo2 size={14} aria-hidden="true" /> Hand back
              </button>
            </>
          )}
          {controlProblem !== undefined && (
            <span className="live-view-problem" role="alert">
              {controlProblem}
            </span>
          )}
        </div>
      )}
    </div>
  );
}
