/**
 * Signs the page in, then shows the app. A token comes from localStorage, or, in the embedded
 * single-user install opened on this computer, from `GET /auth/local` without any ceremony;
 * otherwise the page asks for one.
 */
import { useCallback, useEffect, useMemo, useState } from "react";
import { ApiError, createApiClient, fetchLocalToken, type ApiClient } from "./api/client.ts";
import type { Me } from "./api/types.ts";
import { Shell } from "./components/shell.tsx";
import { SignIn } from "./components/sign-in.tsx";
import { SessionProvider } from "./state/session.tsx";

const tokenKey = "roost.token";

type Auth =
  | { status: "checking" }
  | { status: "signed-out"; message: string | undefined; offline: boolean }
  | { status: "signed-in"; api: ApiClient; me: Me };

export function App() {
  const [auth, setAuth] = useState<Auth>({ status: "checking" });
  const [attempt, setAttempt] = useState(0);

  const signOut = useCallback((message?: string) => {
    localStorage.removeItem(tokenKey);
    sessionStorage.setItem("roost.signed-out", "1");
    setAuth({ status: "signed-out", message, offline: false });
  }, []);

  /** Checks a token with GET /v1/me; resolves to an error message when it does not work. */
  const tryToken = useCallback(
    async (token: string, remember: boolean): Promise<string | undefined> => {
      const api = createApiClient({
        token,
        onUnauthenticated: () =>
          signOut("Your session ended: the token is no longer valid. Sign in again."),
      });
      try {
        const me = await createApiClient({ token }).me();
        if (remember) localStorage.setItem(tokenKey, token);
        sessionStorage.removeItem("roost.signed-out");
        setAuth({ status: "signed-in", api, me });
        return undefined;
      } catch (error) {
        if (error instanceof ApiError && error.status === 401)
          return "That token is not valid. Check it, or create one with `roost token create`.";
        throw error;
      }
    },
    [signOut],
  );

  useEffect(() => {
    let cancelled = false;
    void (async () => {
      try {
        const stored = localStorage.getItem(tokenKey);
        if (stored !== null && (await tryToken(stored, false)) === undefined) return;
        if (stored !== null) localStorage.removeItem(tokenKey);
        // After an explicit sign-out, don't sign straight back in.
        if (sessionStorage.getItem("roost.signed-out") === null) {
          const local = await fetchLocalToken();
          if (local !== undefined && (await tryToken(local, true)) === undefined) return;
        }
        if (!cancelled) setAuth({ status: "signed-out", message: undefined, offline: false });
      } catch (error) {
        if (cancelled) return;
        const offline = error instanceof ApiError && error.code === "network";
        setAuth({
          status: "signed-out",
          message: error instanceof Error ? error.message : String(error),
          offline,
        });
        if (offline) setTimeout(() => setAttempt((value) => value + 1), 3000);
      }
    })();
    return () => {
      cancelled = true;
    };
  }, [tryToken, attempt]);

  const onSignOut = useMemo(() => () => signOut(), [signOut]);

  switch (auth.status) {
    case "checking":
      return (
        <div className="splash" aria-busy="true">
          <span className="brand-mark" aria-hidden="true" />
          <span className="visually-hidden">Loading Roost…</span>
        </div>
      );
    case "signed-out":
      return (
        <SignIn
          message={auth.message}
          offline={auth.offline}
          onSubmit={(token) => tryToken(token, true)}
        />
      );
    case "signed-in":
      return (
        <SessionProvider api={auth.api} me={auth.me} signOut={onSignOut}>
          <Shell />
        </SessionProvider>
      );
  }
}
