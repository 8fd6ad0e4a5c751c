/**
 * The colour theme: "system" (follow prefers-color-scheme), "light" or "dark". The choice lives in
 * localStorage and on <html data-theme>, which styles.css reads; "system" removes the attribute so
 * the media query decides. The canvas engine needs the resolved mode (useResolvedTheme).
 */
import { useEffect, useSyncExternalStore } from "react";

export type ThemeChoice = "system" | "light" | "dark";
export type ResolvedTheme = "light" | "dark";

export const THEME_KEY = "plait.theme";
const CHOICES: ThemeChoice[] = ["system", "light", "dark"];
const listeners = new Set<() => void>();

function readChoice(): ThemeChoice {
  try {
    const v = localStorage.getItem(THEME_KEY);
    return CHOICES.includes(v as ThemeChoice) ? (v as ThemeChoice) : "system";
  } catch {
    return "system";
  }
}

let choice: ThemeChoice = readChoice();

function systemDark(): boolean {
  return typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches;
}

/** Put the choice on <html> (no attribute for "system"). */
export function applyTheme(c: ThemeChoice = choice): void {
  if (typeof document === "undefined") return;
  const root = document.documentElement;
  if (c === "system") root.removeAttribute("data-theme");
  else root.setAttribute("data-theme", c);
}

export function getTheme(): ThemeChoice {
  return choice;
}

export function setTheme(c: ThemeChoice): void {
  choice = c;
  try {
    if (c === "system") localStorage.removeItem(THEME_KEY);
    else localStorage.setItem(THEME_KEY, c);
  } catch {
    /* private mode: the choice lasts for the page */
  }
  applyTheme(c);
  listeners.forEach((l) => l());
}

/** The next choice of the header toggle: system -> light -> dark -> system. */
export function nextTheme(c: ThemeChoice): ThemeChoice {
  return CHOICES[(CHOICES.indexOf(c) + 1) % CHOICES.length];
}

export function resolveTheme(c: ThemeChoice, dark: boolean = systemDark()): ResolvedTheme {
  return c === "system" ? (dark ? "dark" : "light") : c;
}

function subscribe(l: () => void): () => void {
  listeners.add(l);
  const mq = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : null;
  mq?.addEventListener?.("change", l);
  return () => {
    listeners.delete(l);
    mq?.removeEventListener?.("change", l);
  };
}

export function useThemeChoice(): ThemeChoice {
  return useSyncExternalStore(subscribe, getTheme, getTheme);
}

export function useResolvedTheme(): ResolvedTheme {
  return useSyncExternalStore(
    subscribe,
    () => resolveTheme(choice),
    () => "light",
  );
}

/** Apply the stored choice once the app mounts (and whenever it changes). */
export function useApplyTheme(): void {
  const c = useThemeChoice();
  useEffect(() => applyTheme(c), [c]);
}

applyTheme();
