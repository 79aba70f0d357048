/** Light and dark themes: the system's by default, or the person's choice (kept in localStorage). */
import { useSyncExternalStore } from "react";

export type ThemeChoice = "system" | "light" | "dark";
const key = "roost.theme";
const listeners = new Set<() => void>();

export function getThemeChoice(): ThemeChoice {
  const stored = localStorage.getItem(key);
  return stored === "light" || stored === "dark" ? stored : "system";
}

export function applyTheme(choice: ThemeChoice = getThemeChoice()): void {
  if (choice === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = choice;
}

export function setThemeChoice(choice: ThemeChoice): void {
  if (choice === "system") localStorage.removeItem(key);
  else localStorage.setItem(key, choice);
  applyTheme(choice);
  listeners.forEach((listener) => listener());
}

export function useThemeChoice(): ThemeChoice {
  return useSyncExternalStore((listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, getThemeChoice);
}

const media = window.matchMedia("(prefers-color-scheme: dark)");
export function useEffectiveTheme(): "light" | "dark" {
  const choice = useThemeChoice();
  const systemDark = useSyncExternalStore(
    (listener) => {
      media.addEventListener("change", listener);
      return () => media.removeEventListener("change", listener);
    },
    () => media.matches,
  );
  return choice === "system" ? (systemDark ? "dark" : "light") : choice;
}
