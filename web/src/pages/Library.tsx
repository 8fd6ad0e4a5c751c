/** The flow library: list, search, create, rename, duplicate, delete, import, export, share.
 * It lists what the caller owns or has been shared (the server filters); the row's controls
 * follow the caller's `access`. */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { api, ApiError, request } from "../api";
import { ShareDialog } from "../editor/ShareDialog";
import { navigate, paths } from "../router";
import { accessLabel, canEdit, canManage } from "../state/access";
import { useAuth } from "../state/auth";
import { emptyDocument, uniqueId } from "../state/graph";
import { rememberImport } from "../state/imported";
import type { FlowOut, FlowSummary } from "../types";
import { Dialog } from "../ui/Dialog";
import { download, errorText, fmtTime } from "../ui/format";

type Pending =
  | { kind: "new" }
  | { kind: "rename"; flow: FlowSummary }
  | { kind: "delete"; flow: FlowSummary }
  | { kind: "share"; flow: FlowSummary }
  | { kind: "overwrite"; content: string; message: string };

/** Fired on window when the library changed (a flow deleted, renamed, added): the shell's tabs follow. */
export const FLOWS_CHANGED = "plait:flows-changed";

export function slugify(name: string): string {
  return name.toLowerCase().trim().replace(/[^a-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 60) || "flow";
}

export function Library() {
  const [flows, setFlows] = useState<FlowSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [query, setQuery] = useState("");
  const [pending, setPending] = useState<Pending | null>(null);
  const fileRef = useRef<HTMLInputElement>(null);
  const auth = useAuth();
  const isAdmin = auth.status === "signed_in" && auth.me.role === "admin";

  // A failed load is not an empty library: `flows` stays null (no "No flows yet"), the error
  // says what failed, with a retry; a flow change tells the shell (tab names, deleted flows).
  const [loadError, setLoadError] = useState<string | null>(null);
  const load = useCallback(async (changed = false) => {
    try {
      setFlows(await api.listFlows());
      setLoadError(null);
      if (changed) window.dispatchEvent(new Event(FLOWS_CHANGED));
    } catch (e) {
      setLoadError(errorText(e));
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);

  const shown = useMemo(() => {
    const q = query.trim().toLowerCase();
    if (!flows) return [];
    if (!q) return flows;
    return flows.filter((f) => `${f.id} ${f.name} ${f.description}`.toLowerCase().includes(q));
  }, [flows, query]);

  const act = async (fn: () => Promise<void>) => {
    try {
      setError(null);
      await fn();
    } catch (e) {
      setError(errorText(e));
    }
  };

  const importText = async (content: string, overwrite = false) => {
    try {
      const flow: FlowOut & { format?: string | null; warnings?: string[] } = await api.importFlow(content, overwrite);
      setNotice(`Imported ${flow.id}`);
      rememberImport(flow); // the editor says what the import approximated once it opens
      await load(true);
      navigate(paths.flow(flow.id));
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) setPending({ kind: "overwrite", content, message: e.message });
      else setError(errorText(e));
    }
  };

  const onFile = async (e: React.ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    e.target.value = "";
    if (!file) return;
    await importText(await file.text());
  };

  const exportFlow = (f: FlowSummary, format: "json" | "yaml") =>
    act(async () => {
      const text = await api.exportFlow(f.id, format, "draft");
      download(`${f.id}.plait.${format}`, text, format === "json" ? "application/json" : "application/yaml");
    });

  return (
    <div className="page library" data-testid="library">
      <div className="page-head">
        <h1>Flows</h1>
        <div className="buttons">
          <button type="button" className="primary" data-testid="new-flow" onClick={() => setPending({ kind: "new" })}>
            New flow
          </button>
          <button type="button" data-testid="import-flow" onClick={() => fileRef.current?.click()}>
            Import…
          </button>
          <input
            ref={fileRef}
            type="file"
            accept=".json,.yaml,.yml,application/json,application/yaml"
            className="visually-hidden"
            data-testid="import-file"
            aria-label="Import a flow file: a plait flow (JSON or YAML) or a RAGFlow agent (JSON)"
            onChange={onFile}
          />
        </div>
      </div>
      <label htmlFor="library-search" className="visually-hidden">
        Search flows
      </label>
      <input
        id="library-search"
        type="search"
        placeholder="Search flows by name, id or description"
        data-testid="library-search"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
      />
      {error && (
        <p className="error" role="alert" data-testid="library-error">
          {error}
        </p>
      )}
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      {loadError && (
        <p className="error" role="alert" data-testid="library-load-error">
          Could not load the flows: {loadError}{" "}
          <button type="button" className="small" onClick={() => void load()}>
            Try again
          </button>
        </p>
      )}
      {flows === null ? (
        !loadError && (
          <p className="loading" data-testid="library-loading" aria-busy="true">
            Loading the flows…
          </p>
        )
      ) : shown.length === 0 ? (
        <p className="muted" data-testid="library-empty">
          {flows.length ? "No flow matches." : "No flows yet: create one or import a file."}
        </p>
      ) : (
        <table className="flow-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Id</th>
              <th scope="col">Published</th>
              <th scope="col">Updated</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {shown.map((f) => (
              <tr key={f.id} data-testid={`flow-row-${f.id}`}>
                <td>
                  <a href={paths.flow(f.id)} data-testid={`open-${f.id}`} onClick={(e) => (e.preventDefault(), navigate(paths.flow(f.id)))}>
                    {f.name || f.id}
                  </a>
                  {accessLabel(f.access) && (
                    <span className="access-badge" data-testid={`access-${f.id}`}>
                      {accessLabel(f.access)}
                    </span>
                  )}
                  {f.description && <div className="muted small-text">{f.description}</div>}
                </td>
                <td>
                  <code>{f.id}</code>
                </td>
                <td>{f.latest_version ? `v${f.latest_version}` : "draft"}</td>
                <td>{fmtTime(f.updated_at)}</td>
                <td className="row-actions">
                  {canEdit(f.access) && (
                    <button type="button" className="small" data-testid={`rename-${f.id}`} onClick={() => setPending({ kind: "rename", flow: f })}>
                      Rename
                    </button>
                  )}
                  <button
                    type="button"
                    className="small"
                    data-testid={`duplicate-${f.id}`}
                    onClick={() =>
                      act(async () => {
                        const taken = new Set(flows.map((x) => x.id));
                        const id = uniqueId(`${f.id}-copy`, taken);
                        await request<FlowOut>("POST", `/api/v1/flows/${encodeURIComponent(f.id)}/duplicate`, { id, name: `${f.name || f.id} (copy)` });
                        setNotice(`Duplicated as ${id}`);
                        await load(true);
                      })
                    }
                  >
                    Duplicate
                  </button>
                  <button type="button" className="small" data-testid={`export-${f.id}`} onClick={() => exportFlow(f, "json")}>
                    Export JSON
                  </button>
                  <button type="button" className="small" data-testid={`export-yaml-${f.id}`} onClick={() => exportFlow(f, "yaml")}>
                    YAML
                  </button>
                  {f.access && canManage(f.access) && (
                    <button type="button" className="small" data-testid={`share-${f.id}`} onClick={() => setPending({ kind: "share", flow: f })}>
                      Share…
                    </button>
                  )}
                  {canManage(f.access) && (
                    <button type="button" className="small danger" data-testid={`delete-${f.id}`} onClick={() => setPending({ kind: "delete", flow: f })}>
                      Delete
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pending?.kind === "new" && (
        <NameDialog
          title="New flow"
          withId
          taken={new Set(flows?.map((f) => f.id))}
          onClose={() => setPending(null)}
          onSubmit={async (name, id) => {
            const flow = await api.createFlow(emptyDocument(id, name), id, name);
            setPending(null);
            navigate(paths.flow(flow.id));
          }}
        />
      )}
      {pending?.kind === "rename" && (
        <NameDialog
          title={`Rename ${pending.flow.id}`}
          initial={pending.flow.name}
          onClose={() => setPending(null)}
          onSubmit={async (name) => {
            await api.updateFlow(pending.flow.id, { name });
            setPending(null);
            await load(true);
          }}
        />
      )}
      {pending?.kind === "delete" && (
        <Dialog title={`Delete ${pending.flow.name || pending.flow.id}?`} onClose={() => setPending(null)} testId="delete-dialog">
          <p>The flow and its versions are deleted; its runs are kept.</p>
          <div className="buttons">
            <button
              type="button"
              className="danger"
              data-testid="delete-confirm"
              onClick={() =>
                act(async () => {
                  await api.deleteFlow(pending.flow.id);
                  setPending(null);
                  await load(true);
                })
              }
            >
              Delete
            </button>
            <button type="button" onClick={() => setPending(null)}>
              Cancel
            </button>
          </div>
        </Dialog>
      )}
      {pending?.kind === "share" && (
        <ShareDialog flowId={pending.flow.id} flowName={pending.flow.name || pending.flow.id} ownerId={pending.flow.owner_id} isAdmin={isAdmin} onClose={() => setPending(null)} />
      )}
      {pending?.kind === "overwrite" && (
        <Dialog title="Replace the existing flow?" onClose={() => setPending(null)} testId="overwrite-dialog">
          <p>{pending.message}</p>
          <div className="buttons">
            <button
              type="button"
              className="danger"
              data-testid="overwrite-confirm"
              onClick={() => {
                const c = pending.content;
                setPending(null);
                void importText(c, true);
              }}
            >
              Replace its draft
            </button>
            <button type="button" onClick={() => setPending(null)}>
              Cancel
            </button>
          </div>
        </Dialog>
      )}
    </div>
  );
}

function NameDialog({
  title,
  initial = "",
  withId,
  taken,
  onClose,
  onSubmit,
}: {
  title: string;
  initial?: string;
  withId?: boolean;
  taken?: Set<string>;
  onClose: () => void;
  onSubmit: (name: string, id: string) => Promise<void>;
}) {
  const [name, setName] = useState(initial);
  const [id, setId] = useState("");
  const [error, setError] = useState<string | null>(null);
  const effectiveId = id || uniqueId(slugify(name), taken ?? new Set());
  return (
    <Dialog title={title} onClose={onClose} testId="name-dialog">
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          if (!name.trim()) return setError("Give it a name.");
          try {
            await onSubmit(name.trim(), effectiveId);
          } catch (err) {
            setError(errorText(err));
          }
        }}
      >
        <label htmlFor="flow-name-input">Name</label>
        <input id="flow-name-input" data-testid="flow-name-input" value={name} onChange={(e) => setName(e.target.value)} />
        {withId && (
          <>
            <label htmlFor="flow-id-input">Id (the library key; letters, digits, - and _)</label>
            <input id="flow-id-input" data-testid="flow-id-input" value={id} placeholder={effectiveId} onChange={(e) => setId(e.target.value)} />
          </>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <div className="buttons">
          <button type="submit" className="primary" data-testid="name-dialog-submit">
            Save
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}
