/** A tiny pathname router (history API): the app has six screens, a library would be overkill.
 * Signing in is not a route: the shell shows the login page at whatever path needs a session
 * (the server's failed sign-in link lands on `/?signin=expired`). */
import { useEffect, useState } from "react";

const EVENT = "plait:navigate";

export function navigate(path: string, replace = false): void {
  if (path === location.pathname + location.search) return;
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  window.dispatchEvent(new Event(EVENT));
}

export function usePath(): string {
  const [path, setPath] = useState(() => location.pathname);
  useEffect(() => {
    const update = () => setPath(location.pathname);
    window.addEventListener("popstate", update);
    window.addEventListener(EVENT, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(EVENT, update);
    };
  }, []);
  return path;
}

export type Route =
  | { name: "library" }
  | { name: "editor"; flowId: string }
  | { name: "run"; runId: string }
  | { name: "task"; token: string }
  | { name: "keys" }
  | { name: "users" }
  | { name: "knowledge" } // B3
  | { name: "models" } // W4: settings
  | { name: "variables" } // W4: settings
  | { name: "shortcuts" }
  | { name: "not_found"; path: string };

export function matchRoute(path: string): Route {
  const parts = path.replace(/\/+$/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === "flows")) return { name: "library" };
  if (parts.length === 2 && parts[0] === "flows") return { name: "editor", flowId: parts[1] };
  if (parts.length === 2 && parts[0] === "runs") return { name: "run", runId: parts[1] };
  if (parts.length === 2 && parts[0] === "tasks") return { name: "task", token: parts[1] };
  if (parts.length === 1 && parts[0] === "keys") return { name: "keys" };
  if (parts.length === 1 && parts[0] === "users") return { name: "users" };
  if (parts.length === 1 && parts[0] === "knowledge") return { name: "knowledge" }; // B3
  if (parts[0] === "settings" && (parts.length === 1 || (parts.length === 2 && parts[1] === "models"))) return { name: "models" }; // W4
  if (parts.length === 2 && parts[0] === "settings" && parts[1] === "variables") return { name: "variables" }; // W4
  if (parts.length === 2 && parts[0] === "settings" && parts[1] === "shortcuts") return { name: "shortcuts" };
  return { name: "not_found", path };
}

export const paths = {
  library: () => "/",
  flow: (id: string) => `/flows/${encodeURIComponent(id)}`,
  run: (id: string) => `/runs/${encodeURIComponent(id)}`,
  task: (token: string) => `/tasks/${encodeURIComponent(token)}`,
  keys: () => "/keys",
  users: () => "/users",
  knowledge: () => "/knowledge", // B3
  models: () => "/settings/models", // W4
  variables: () => "/settings/variables", // W4
  shortcuts: () => "/settings/shortcuts",
};

/** A link that navigates without reloading. */
export function linkProps(path: string) {
  return {
    href: path,
    onClick: (e: React.MouseEvent) => {
      if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      navigate(path);
    },
  };
}
