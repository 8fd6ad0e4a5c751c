/** The shell: sign-in gate, header with the open-flow tabs and the user menu, and the routes. */
import { lazy, Suspense, useCallback, useEffect, useRef, useState } from "react";
import { api, onUnauthorized } from "./api";
import { loadNodeTypes } from "./nodeTypes";
import { ApiKeysPage } from "./pages/ApiKeys";
import Editor from "./pages/Editor";
import { FLOWS_CHANGED, Library } from "./pages/Library";
import { LoginPage } from "./pages/Login";
import RunInspector from "./pages/RunInspector";
import { TaskPage } from "./pages/TaskPage";
import { UsersPage } from "./pages/Users";
import { linkProps, matchRoute, navigate, paths, usePath, type Route } from "./router";
import { authStore, useAuth } from "./state/auth";
import { ThemeToggle } from "./theme/ThemeToggle";
import type { Me } from "./types";

// Editor and RunInspector are imported eagerly: a lazy screen suspends on first open and React
// keeps a shown fallback for 300 ms, most of the time to open a 200-node flow (the UI is ~150 kB gz).
const KnowledgePage = lazy(() => import("./knowledge/KnowledgePage")); // B3
const ModelsPage = lazy(() => import("./settings/ModelsPage")); // W4
const VariablesPage = lazy(() => import("./settings/VariablesPage")); // W4
const ShortcutsPage = lazy(() => import("./settings/ShortcutsPage"));
const TABS_KEY = "plait.openFlows";

function loadTabs(): string[] {
  try {
    const v = JSON.parse(localStorage.getItem(TABS_KEY) ?? "[]");
    return Array.isArray(v) ? v.filter((x) => typeof x === "string") : [];
  } catch {
    return [];
  }
}

export function App() {
  const path = usePath();
  const route = matchRoute(path);
  if (route.name === "task") return <TaskPage token={route.token} />; // the task token is the credential
  return <SignedIn route={route} />;
}

/** Nothing but the login page until the server says who we are (no flash of the library). */
function SignedIn({ route }: { route: Route }) {
  const auth = useAuth();
  useEffect(() => {
    void authStore.check();
    return onUnauthorized(() => authStore.unauthorized());
  }, []);
  useEffect(() => {
    // an old sign-in link opened while signed in: nothing to say, drop the ?signin= reason
    if (auth.status === "signed_in" && new URLSearchParams(location.search).has("signin")) history.replaceState(null, "", location.pathname);
  }, [auth.status]);
  if (auth.status === "checking") return <p className="loading" data-testid="auth-checking" aria-busy="true" />;
  if (auth.status === "error")
    return (
      <div className="page narrow" data-testid="auth-error">
        <h1>Cannot reach the plait server</h1>
        <p className="error" role="alert">
          {auth.message}
        </p>
        <button type="button" className="primary" onClick={() => void authStore.check()}>
          Try again
        </button>
      </div>
    );
  if (auth.status === "signed_out") return <LoginPage reason={auth.reason} />;
  return <Shell route={route} me={auth.me} />;
}

function Shell({ route, me }: { route: Route; me: Me }) {
  const [tabs, setTabs] = useState<string[]>(loadTabs);
  const [names, setNames] = useState<Record<string, string>>({});
  const lastOpened = useRef<string | null>(null);

  // warm up the node registry, which opening a flow needs
  useEffect(() => {
    const t = setTimeout(() => loadNodeTypes().catch(() => undefined), 50);
    return () => clearTimeout(t);
  }, []);
  useEffect(() => localStorage.setItem(TABS_KEY, JSON.stringify(tabs)), [tabs]);
  useEffect(() => {
    // a tab opens when a flow is opened (not again while its editor stays open after the tab went)
    const opened = route.name === "editor" ? route.flowId : null;
    if (opened === lastOpened.current) return;
    lastOpened.current = opened;
    if (opened) setTabs((t) => (t.includes(opened) ? t : [...t, opened]));
  }, [route]);
  useEffect(() => {
    document.querySelector(".tabs .tab.active")?.scrollIntoView?.({ block: "nearest", inline: "nearest" });
  }, [route, tabs]);

  const closeTab = useCallback(
    (id: string) => {
      setTabs((t) => {
        const next = t.filter((x) => x !== id);
        if (route.name === "editor" && route.flowId === id) navigate(next.length ? paths.flow(next[next.length - 1]) : paths.library());
        return next;
      });
    },
    [route],
  );
  const onFlowName = useCallback((id: string, name: string) => setNames((n) => (n[id] === name ? n : { ...n, [id]: name })), []);
  const onFlowGone = useCallback((id: string) => setTabs((t) => t.filter((x) => x !== id)), []);

  // Tabs show the flows' names, and a flow that is gone (deleted here or elsewhere, or a tab kept
  // in this browser from before) loses its tab: the shell asks for the list at start and whenever
  // the library changes it.
  useEffect(() => {
    let live = true;
    const refresh = () =>
      api.listFlows().then(
        (flows) => {
          if (!live) return;
          const byId = new Map(flows.map((f) => [f.id, f.name || f.id]));
          setNames((n) => ({ ...n, ...Object.fromEntries(byId) }));
          if (flows.length >= 500) return; // a partial list says nothing about the others
          setTabs((t) => {
            const kept = t.filter((id) => byId.has(id));
            return kept.length === t.length ? t : kept;
          });
        },
        () => undefined,
      );
    void refresh();
    window.addEventListener(FLOWS_CHANGED, refresh);
    return () => {
      live = false;
      window.removeEventListener(FLOWS_CHANGED, refresh);
    };
  }, []);

  return (
    <div className="app">
      <header className="app-header">
        <a className="brand" {...linkProps(paths.library())} data-testid="nav-library">
          plait
        </a>
        <nav className="tabs" aria-label="Open flows" role="tablist">
          <a
            role="tab"
            aria-selected={route.name === "library"}
            className={`tab${route.name === "library" ? " active" : ""}`}
            {...linkProps(paths.library())}
          >
            Library
          </a>
          {tabs.map((id) => {
            const active = route.name === "editor" && route.flowId === id;
            return (
              <span key={id} className={`tab${active ? " active" : ""}`} data-testid={`tab-${id}`} title={names[id] ? `${names[id]} (${id})` : id}>
                <a role="tab" aria-selected={active} className={names[id] ? undefined : "tab-pending"} {...linkProps(paths.flow(id))}>
                  {names[id] ?? "…"}
                </a>
                <button type="button" className="tab-close" aria-label={`Close ${names[id] ?? id}`} data-testid={`tab-close-${id}`} onClick={() => closeTab(id)}>
                  ✕
                </button>
              </span>
            );
          })}
        </nav>
        <UserMenu me={me} route={route} />
      </header>
      <main className="app-main">
        <Suspense fallback={<p className="loading">Loading…</p>}>
          {route.name === "library" && <Library />}
          {route.name === "editor" && <Editor key={route.flowId} flowId={route.flowId} onName={onFlowName} onGone={onFlowGone} />}
          {route.name === "run" && <RunInspector key={route.runId} runId={route.runId} />}
          {route.name === "keys" && <ApiKeysPage me={me} />}
          {route.name === "users" && <UsersPage me={me} />}
          {route.name === "knowledge" && <KnowledgePage />} {/* B3 */}
          {route.name === "models" && <ModelsPage />} {/* W4 */}
          {route.name === "variables" && <VariablesPage />} {/* W4 */}
          {route.name === "shortcuts" && <ShortcutsPage />}
          {route.name === "not_found" && (
            <div className="page">
              <h1>Not found</h1>
              <p>
                Nothing at <code>{route.path}</code>. <a {...linkProps(paths.library())}>Back to the library</a>
              </p>
            </div>
          )}
        </Suspense>
      </main>
    </div>
  );
}

function UserMenu({ me, route }: { me: Me; route: Route }) {
  const [busy, setBusy] = useState(false);
  return (
    <div className="user-menu" data-testid="user-menu">
      <ThemeToggle />
      {/* B3 */}
      <a className={`header-link${route.name === "knowledge" ? " active" : ""}`} data-testid="nav-knowledge" {...linkProps(paths.knowledge())}>
        Knowledge
      </a>
      {/* W4 */}
      <a className={`header-link${route.name === "models" || route.name === "variables" || route.name === "shortcuts" ? " active" : ""}`} data-testid="nav-settings" {...linkProps(paths.models())}>
        Settings
      </a>
      <a className={`header-link${route.name === "keys" ? " active" : ""}`} data-testid="nav-keys" {...linkProps(paths.keys())}>
        API keys
      </a>
      {me.role === "admin" && (
        <a className={`header-link${route.name === "users" ? " active" : ""}`} data-testid="nav-users" {...linkProps(paths.users())}>
          Users
        </a>
      )}
      <span className="user-chip" data-testid="current-user" title={me.auth && me.auth !== "session" ? "signed in with an API key" : undefined}>
        {me.name || me.email}
        {me.name && <span className="user-email"> {me.email}</span>} <span className={`role-badge role-${me.role}`} data-testid="current-role">{me.role}</span>
      </span>
      <button
        type="button"
        className="small"
        data-testid="sign-out"
        disabled={busy}
        onClick={() => {
          setBusy(true);
          void authStore.signOut();
        }}
      >
        Sign out
      </button>
    </div>
  );
}
