/** The shell: API key, header with the open-flow tabs, and the routes. */
import { Suspense, useCallback, useEffect, useState } from "react";
import { api, getApiKey, onUnauthorized, setApiKey } from "./api";
import { loadNodeTypes } from "./nodeTypes";
import Editor from "./pages/Editor";
import { Library } from "./pages/Library";
import RunInspector from "./pages/RunInspector";
import { TaskPage } from "./pages/TaskPage";
import { linkProps, matchRoute, navigate, paths, usePath } from "./router";
import { Dialog } from "./ui/Dialog";

// Editor and RunInspector are imported eagerly: a lazy screen suspends on first open and React
// keeps a shown fallback for 300 ms, most of the time to open a 200-node flow (the UI is ~150 kB gz).
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
  if (route.name === "task") return <TaskPage token={route.token} />;
  return <Shell route={route} />;
}

function Shell({ route }: { route: ReturnType<typeof matchRoute> }) {
  const [keyDialog, setKeyDialog] = useState<null | "rejected" | "manual">(null);
  const [tabs, setTabs] = useState<string[]>(loadTabs);
  const [names, setNames] = useState<Record<string, string>>({});

  useEffect(() => onUnauthorized(() => setKeyDialog("rejected")), []);
  // warm up the node registry, which opening a flow needs
  useEffect(() => {
    const t = setTimeout(() => loadNodeTypes().catch(() => undefined), 50);
    return () => clearTimeout(t);
  }, []);
  useEffect(() => localStorage.setItem(TABS_KEY, JSON.stringify(tabs)), [tabs]);
  useEffect(() => {
    if (route.name === "editor" && !tabs.includes(route.flowId)) setTabs((t) => [...t, route.flowId]);
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
              <span key={id} className={`tab${active ? " active" : ""}`} data-testid={`tab-${id}`}>
                <a role="tab" aria-selected={active} {...linkProps(paths.flow(id))}>
                  {names[id] ?? id}
                </a>
                <button type="button" className="tab-close" aria-label={`Close ${names[id] ?? id}`} data-testid={`tab-close-${id}`} onClick={() => closeTab(id)}>
                  ✕
                </button>
              </span>
            );
          })}
        </nav>
        <button type="button" className="small" data-testid="api-key-button" onClick={() => setKeyDialog("manual")}>
          API key
        </button>
      </header>
      <main className="app-main">
        <Suspense fallback={<p className="loading">Loading…</p>}>
          {route.name === "library" && <Library />}
          {route.name === "editor" && <Editor key={route.flowId} flowId={route.flowId} onName={onFlowName} onGone={onFlowGone} />}
          {route.name === "run" && <RunInspector key={route.runId} runId={route.runId} />}
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
      {keyDialog && <KeyDialog reason={keyDialog} onClose={() => setKeyDialog(null)} />}
    </div>
  );
}

function KeyDialog({ reason, onClose }: { reason: "rejected" | "manual"; onClose: () => void }) {
  const [key, setKey] = useState(getApiKey());
  const [status, setStatus] = useState<string | null>(null);
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    setApiKey(key);
    setStatus("Checking…");
    try {
      await api.listFlows();
      onClose();
      window.location.reload();
    } catch (err: any) {
      setStatus(err?.status === 401 ? "The server rejected this key (401 unauthorized)." : `Could not check the key: ${err?.message ?? err}`);
    }
  };
  return (
    <Dialog title="API key" onClose={onClose} testId="api-key-dialog">
      <form onSubmit={save}>
        {reason === "rejected" && (
          <p className="error" role="alert" data-testid="api-key-rejected">
            The server rejected the request: the API key is missing or wrong. Enter a valid key (
            <code>plait serve</code> prints the admin key once at its first start; <code>PLAIT_API_KEY</code> sets one).
          </p>
        )}
        <label htmlFor="api-key-input">API key (sent as x-api-key, kept in this browser)</label>
        <input id="api-key-input" data-testid="api-key-input" type="password" autoComplete="off" value={key} onChange={(e) => setKey(e.target.value)} />
        {status && (
          <p role="status" data-testid="api-key-status">
            {status}
          </p>
        )}
        <div className="buttons">
          <button type="submit" className="primary" data-testid="api-key-save">
            Save key
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}
