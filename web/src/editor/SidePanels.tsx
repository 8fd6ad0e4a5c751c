/** Side panels of the editor: run history and version history. */
import { useCallback, useEffect, useState } from "react";
import { api } from "../api";
import { linkProps, paths } from "../router";
import { tokensOf } from "../state/run";
import type { RunSummary, VersionOut } from "../types";
import { errorText, fmtDuration, fmtTime } from "../ui/format";

export function runDurationMs(r: RunSummary): number | null {
  if (typeof r.duration_ms === "number") return r.duration_ms;
  if (!r.started_at) return null;
  const end = r.finished_at ?? (r.status === "running" ? Date.now() / 1000 : null);
  return end ? (end - r.started_at) * 1000 : null;
}

export function RunsPanel({ flowId, refreshKey }: { flowId: string; refreshKey: unknown }) {
  const [runs, setRuns] = useState<RunSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(async () => {
    try {
      setRuns(await api.listRuns(flowId));
    } catch (e) {
      setError(errorText(e));
    }
  }, [flowId]);
  useEffect(() => {
    void load();
  }, [load, refreshKey]);
  return (
    <div className="side-panel" data-testid="runs-panel">
      <div className="panel-head">
        <h2>Runs</h2>
        <button type="button" className="small" onClick={load} data-testid="runs-refresh">
          Refresh
        </button>
      </div>
      {error && <p className="error">{error}</p>}
      {runs?.length === 0 && <p className="muted">No runs yet.</p>}
      <table className="runs-table">
        <thead>
          <tr>
            <th scope="col">Status</th>
            <th scope="col">Started</th>
            <th scope="col">Duration</th>
            <th scope="col">Tokens</th>
          </tr>
        </thead>
        <tbody>
          {runs?.map((r) => (
            <tr key={r.id} data-testid={`run-row-${r.id}`} data-status={r.status}>
              <td>
                <a {...linkProps(paths.run(r.id))} className={`status-pill status-${r.status}`} data-testid={`run-link-${r.id}`}>
                  {r.status}
                </a>
              </td>
              <td>
                {fmtTime(r.created_at)}
                {r.trigger_id && (
                  <span className="muted small-text" title={`started by trigger ${r.trigger_id}`} data-testid={`run-trigger-${r.id}`}>
                    {" "}
                    · trigger
                  </span>
                )}
              </td>
              <td data-testid={`run-duration-${r.id}`}>{fmtDuration(runDurationMs(r))}</td>
              <td data-testid={`run-tokens-${r.id}`}>{(typeof r.tokens === "number" ? r.tokens : tokensOf(r.usage)) || "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function VersionsPanel({
  flowId,
  refreshKey,
  viewing,
  onView,
  onRestore,
}: {
  flowId: string;
  refreshKey: unknown;
  viewing: number | null;
  onView: (v: VersionOut) => void;
  /** Absent when the caller may not change the draft (a viewer). */
  onRestore?: (v: VersionOut) => void;
}) {
  const [versions, setVersions] = useState<VersionOut[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.versions(flowId).then(setVersions, (e) => setError(errorText(e)));
  }, [flowId, refreshKey]);
  const full = async (v: VersionOut) => (v.document ? v : await api.version(flowId, v.version));
  return (
    <div className="side-panel" data-testid="versions-panel">
      <h2>Versions</h2>
      {error && <p className="error">{error}</p>}
      {versions?.length === 0 && <p className="muted">Nothing published yet.</p>}
      <ul className="versions">
        {versions
          ?.slice()
          .sort((a, b) => b.version - a.version)
          .map((v) => (
            <li key={v.version} data-testid={`version-row-${v.version}`} className={viewing === v.version ? "active" : ""}>
              <strong>v{v.version}</strong> <span className="muted">{fmtTime(v.created_at)}</span>
              {v.note && <div className="small-text">{v.note}</div>}
              <div className="buttons">
                <button type="button" className="small" data-testid={`version-view-${v.version}`} onClick={async () => onView(await full(v))}>
                  View
                </button>
                {onRestore && (
                  <button type="button" className="small" data-testid={`version-restore-${v.version}`} onClick={async () => onRestore(await full(v))}>
                    Restore
                  </button>
                )}
              </div>
            </li>
          ))}
      </ul>
    </div>
  );
}
