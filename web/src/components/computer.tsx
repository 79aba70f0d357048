/**
 * The computer: a status chip (asleep / waking / awake / sleeping / failed) with wake and sleep,
 * the ports listening inside it with links that open their previews, and a files panel for
 * /workspace (files-panel.tsx, loaded when first opened). Hidden when the server has no computer endpoints. A
 * self-hosted machine (the user's own, running `roost worker`) shows whether it is connected
 * instead, and has no wake or sleep.
 */
import { ExternalLink, FolderOpen, Moon, Power } from "lucide-react";
import { lazy, Suspense, useEffect, useRef, useState } from "react";
import type { ComputerState, ListeningPort } from "../api/types.ts";
import { formatRelative } from "../lib/format.ts";
import { useSession } from "../state/session.tsx";

const FilesPanel = lazy(() => import("./files-panel.tsx"));

const stateLabel: Record<ComputerState, string> = {
  asleep: "Asleep",
  waking: "Waking…",
  awake: "Awake",
  sleeping: "Going to sleep…",
  failed: "Failed",
  connected: "Connected",
  disconnected: "Not connected",
};

const stateHelp: Record<ComputerState, string> = {
  asleep: "Your computer is asleep. It wakes by itself when a bot needs it, or wake it now.",
  waking: "Your computer is starting. This usually takes a few seconds.",
  awake:
    "Your computer is running. It goes to sleep by itself a few minutes after the last activity.",
  sleeping: "Your computer is saving its files and going to sleep.",
  failed:
    "Your computer could not start or stop. Try waking it again; if it keeps failing, the server log says why.",
  connected:
    "Your computer is your own machine, and its worker is connected: your bots' commands run there, in its workspace folder.",
  disconnected:
    "Your computer is your own machine, and its worker is not connected. Start `roost worker` on it; until then your bots cannot use it.",
};

export function ComputerControls() {
  const { computer } = useSession();
  const [menuOpen, setMenuOpen] = useState(false);
  const [filesOpen, setFilesOpen] = useState(false);
  const wrapper = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!menuOpen) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") setMenuOpen(false);
    };
    const onClick = (event: MouseEvent) => {
      if (wrapper.current !== null && !wrapper.current.contains(event.target as Node))
        setMenuOpen(false);
    };
    window.addEventListener("keydown", onKey);
    window.addEventListener("mousedown", onClick);
    return () => {
      window.removeEventListener("keydown", onKey);
      window.removeEventListener("mousedown", onClick);
    };
  }, [menuOpen]);

  if (computer.status !== "ok") return null; // unsupported, loading or unreachable: no chip
  const { state } = computer.computer;
  const selfHosted = computer.computer.kind === "self-hosted";
  const canWake = state === "asleep" || state === "failed";
  const canSleep = state === "awake";

  return (
    <div className="computer" ref={wrapper}>
      <button
        type="button"
        className={`computer-chip computer-${state}`}
        data-state={state}
        data-kind={computer.computer.kind}
        aria-expanded={menuOpen}
        aria-haspopup="dialog"
        onClick={() => setMenuOpen((value) => !value)}
        title={stateHelp[state]}
      >
        <span className="computer-dot" aria-hidden="true" />
        <span className="computer-label">
          <span className="computer-word">{selfHosted ? "Your machine " : "Computer "}</span>
          {stateLabel[state]}
        </span>
      </button>
      <button
        type="button"
        className="icon-button"
        onClick={() => setFilesOpen(true)}
        aria-label="Files on the computer"
        title="Files"
      >
        <FolderOpen size={18} aria-hidden="true" />
      </button>
      {menuOpen && (
        <div className="popover" role="dialog" aria-label="Computer">
          <p className="popover-text">{stateHelp[state]}</p>
          <dl className="popover-facts">
            <div>
              <dt>Kind</dt>
              <dd>{selfHosted ? "your own machine (self-hosted)" : "hosted by Roost"}</dd>
            </div>
            {selfHosted ? (
              <div>
                <dt>Worker</dt>
                <dd>{computer.computer.connected ? "connected" : "not connected"}</dd>
              </div>
            ) : (
              <div>
                <dt>Provider</dt>
                <dd>{computer.computer.provider}</dd>
              </div>
            )}
            {!selfHosted && computer.computer.isolated === false && (
              <div>
                <dt>Isolation</dt>
                <dd>none (development provider)</dd>
              </div>
            )}
            {computer.computer.heldByTurns !== undefined && computer.computer.heldByTurns > 0 && (
              <div>
                <dt>In use</dt>
                <dd>
                  by{" "}
                  {computer.computer.heldByTurns === 1
                    ? "a running turn"
                    : `${computer.computer.heldByTurns} running turns`}
                </dd>
              </div>
            )}
            {computer.computer.lastActiveAt !== null && (
              <div>
                <dt>Last active</dt>
                <dd>{formatRelative(computer.computer.lastActiveAt)}</dd>
              </div>
            )}
          </dl>
          {state === "awake" && <PortsSection />}
          {state === "failed" && typeof computer.computer.failure === "string" && (
            <p className="notice notice-error">{computer.computer.failure}</p>
          )}
          {computer.actionError !== undefined && (
            <p className="notice notice-error" role="alert">
              {computer.actionError}
            </p>
          )}
          <div className="popover-actions">
            {!selfHosted && (
              <button
                type="button"
                className="button button-primary button-small"
                disabled={!canWake || computer.busy}
                onClick={computer.wake}
              >
                <Power size={14} aria-hidden="true" /> Wake
              </button>
            )}
            {!selfHosted && (
              <button
                type="button"
                className="button button-small"
                disabled={!canSleep || computer.busy}
                onClick={computer.sleep}
              >
                <Moon size={14} aria-hidden="true" /> Sleep
              </button>
            )}
            <button
              type="button"
              className="button button-small"
              onClick={() => {
                setMenuOpen(false);
                setFilesOpen(true);
              }}
            >
              <FolderOpen size={14} aria-hidden="true" /> Files
            </button>
          </div>
        </div>
      )}
      {filesOpen && (
        <Suspense fallback={null}>
          <FilesPanel onClose={() => setFilesOpen(false)} />
        </Suspense>
      )}
    </div>
  );
}

/** How often the open popover asks which ports listen. */
const portsRefreshMs = 5000;

/** The ports listening inside the awake computer, each with a link that opens its preview. */
function PortsSection() {
  const { api } = useSession();
  const [ports, setPorts] = useState<ListeningPort[]>();
  const [error, setError] = useState<string>();
  const [opening, setOpening] = useState<number>();
  const [fallback, setFallback] = useState<{ port: number; url: string }>();

  useEffect(() => {
    const controller = new AbortController();
    const load = async () => {
      try {
        const result = await api.listPorts(controller.signal);
        setPorts(result.ports);
        setError(undefined);
      } catch (caught) {
        if (controller.signal.aborted) return;
        setError(caught instanceof Error ? caught.message : String(caught));
      }
    };
    void load();
    const timer = setInterval(() => void load(), portsRefreshMs);
    return () => {
      controller.abort();
      clearInterval(timer);
    };
  }, [api]);

  const open = async (port: number) => {
    // Opened now, while the click still counts as the person's: after the await a browser
    // would block it as a pop-up.
    const tab = window.open("about:blank", "_blank");
    setOpening(port);
    setFallback(undefined);
    try {
      const link = await api.previewLink(port);
      if (tab === null) {
        setFallback({ port, url: link.url });
      } else {
        tab.opener = null; // the preview must not reach back into this page
        tab.location.href = link.url;
      }
      setError(undefined);
    } catch (caught) {
      tab?.close();
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setOpening(undefined);
    }
  };

  return (
    <div className="ports" aria-label="Ports">
      <h3 className="ports-title">Ports</h3>
      {ports === undefined && error === undefined && <p className="muted">Looking…</p>}
      {ports !== undefined && ports.length === 0 && (
        <p className="muted">
          Nothing listens yet. A server a bot starts (on 127.0.0.1 or 0.0.0.0) shows up here.
        </p>
      )}
      {ports !== undefined && ports.length > 0 && (
        <ul className="port-list">
          {ports.map((entry) => (
            <li key={entry.port} className="port-row" data-port={entry.port}>
              <span className="port-number">{entry.port}</span>
              <span className="port-addresses muted">{entry.addresses.join(", ")}</span>
              <button
                type="button"
                className="button button-small"
                onClick={() => void open(entry.port)}
                disabled={opening === entry.port}
                aria-label={`Open port ${entry.port}`}
              >
                <ExternalLink size={14} aria-hidden="true" /> Open
              </button>
            </li>
          ))}
        </ul>
      )}
      {fallback !== undefined && (
        <p className="notice notice-info">
          Your browser blocked the new tab.{" "}
          <a href={fallback.url} target="_blank" rel="noopener noreferrer">
            Open port {fallback.port}
          </a>
        </p>
      )}
      {error !== undefined && <p className="notice notice-error">{error}</p>}
    </div>
  );
}
