/** One run: replayed on the canvas from its event log (then live while it runs), with each node's
 * inputs, output, error, attempts and timings; retry from a node; links to waiting human tasks;
 * the nodes that ran again because the server stopped while they ran (`node_rerun`). */
import { Fragment, useCallback, useEffect, useMemo, useReducer, useRef, useState } from "react";
import { api } from "../api";
import FlowCanvas from "../canvas/FlowCanvas";
import { RunNodeDetails } from "../editor/Inspector";
import { DecisionList } from "../ui/DecisionList";
import { stopRun, watchRun, type Watch } from "../live";
import { useNodeTypes } from "../nodeTypes";
import { linkProps, navigate, paths } from "../router";
import { fillMissingPositions } from "../state/layout";
import { idleRun, isActive, liveInputs, normalizeEvent, reduceRun, tokensOf, type RunState } from "../state/run";
import type { FlowDocument, RunDetail } from "../types";
import { errorText, fmtDuration, fmtJson, fmtTime } from "../ui/format";

/** "provider · model" of a model call (as its node's events name them). */
function modelText(m: { provider?: string; model?: string }): string {
  return [m.provider, m.model].filter(Boolean).join(" · ");
}

function reducer(state: RunState, raw: any): RunState {
  if (raw === null) return idleRun();
  const e = normalizeEvent(raw);
  return e ? reduceRun(state, e) : state;
}

export default function RunInspector({ runId }: { runId: string }) {
  const types = useNodeTypes();
  const [detail, setDetail] = useState<RunDetail | null>(null);
  const [doc, setDoc] = useState<FlowDocument | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [run, dispatch] = useReducer(reducer, undefined, idleRun);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [busy, setBusy] = useState(false);
  const watch = useRef<Watch | null>(null);

  const refresh = useCallback(async () => {
    try {
      setDetail(await api.getRun(runId));
    } catch (e) {
      setError(errorText(e));
    }
  }, [runId]);

  useEffect(() => {
    let live = true;
    (async () => {
      try {
        const d = await api.getRun(runId);
        if (!live) return;
        setDetail(d);
        let document: FlowDocument | null | undefined = null;
        try {
          document = d.version ? (await api.version(d.flow_id, d.version)).document : (await api.getFlow(d.flow_id)).draft;
        } catch {
          document = (await api.getFlow(d.flow_id).catch(() => null))?.draft;
        }
        if (!live) return;
        if (document) setDoc(fillMissingPositions({ ...document, nodes: document.nodes ?? [], edges: document.edges ?? [] }));
        dispatch({ type: "run_id", run_id: runId });
        watch.current = await watchRun(runId, (raw) => dispatch(raw), 0);
      } catch (e) {
        if (live) setError(errorText(e));
      }
    })();
    return () => {
      live = false;
      watch.current?.close();
    };
  }, [runId]);

  // refresh the stored detail (inputs, attempts, tasks) whenever the run changes state
  useEffect(() => {
    if (run.status !== "idle") void refresh();
  }, [run.status, refresh]);
  // a waiting run's task row is stored just after its `waiting` event: look again until it shows
  const waitingWithoutTask = detail?.status === "waiting" && !(detail.tasks ?? []).length;
  useEffect(() => {
    if (!waitingWithoutTask) return;
    const t = setInterval(() => void refresh(), 400);
    return () => clearInterval(t);
  }, [waitingWithoutTask, refresh]);

  const onSelect = useCallback((ids: string[]) => setSelected((s) => (ids.length === s.size && ids.every((x) => s.has(x)) ? s : new Set(ids))), []);
  const nodeId = selected.size === 1 ? [...selected][0] : null;
  const nodeDetail = nodeId ? detail?.nodes?.[nodeId] : undefined;
  const runNode = nodeId ? run.nodes[nodeId] : undefined;
  const merged = useMemo(() => {
    if (!nodeId) return undefined;
    if (runNode) return { ...runNode, attempt: nodeDetail?.attempts ?? runNode.attempt, durationMs: runNode.durationMs ?? nodeDetail?.duration_ms, output: runNode.output ?? nodeDetail?.output, error: runNode.error ?? nodeDetail?.error };
    if (nodeDetail)
      return { status: nodeDetail.status as any, preview: "", toolCalls: [], output: nodeDetail.output, error: nodeDetail.error, attempt: nodeDetail.attempts, durationMs: nodeDetail.duration_ms, branch: nodeDetail.ports };
    return undefined;
  }, [nodeId, runNode, nodeDetail]);

  const retry = async () => {
    if (!nodeId) return;
    setBusy(true);
    try {
      const { id } = await api.retryRun(runId, nodeId);
      navigate(paths.run(id));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  if (error && !detail)
    return (
      <div className="page">
        <p className="error" role="alert">
          {error}
        </p>
      </div>
    );
  if (!detail) return <p className="loading">Loading…</p>;
  const status = run.status !== "idle" && run.status !== "starting" ? run.status : detail.status;
  // the run's own started -> finished time (from its events, as the editor shows it; else its row)
  const duration = detail.started_at && detail.status !== "waiting" ? ((detail.finished_at ?? Date.now() / 1000) - detail.started_at) * 1000 : null;
  const active = isActive({ ...run, status: status as any });
  const reruns = Object.entries(run.nodes).flatMap(([id, n]) => (n.reruns ?? []).map((r) => ({ id, ...r })));
  return (
    <div className="editor run-inspector" data-testid="run-inspector">
      <div className="toolbar">
        <h1 className="flow-name">
          Run <code>{runId.slice(0, 12)}</code> of <a {...linkProps(paths.flow(detail.flow_id))}>{detail.flow_id}</a>
          {detail.version ? ` v${detail.version}` : " (draft)"}
        </h1>
        <span className={`status-pill status-${status}`} data-testid="run-status" data-status={status}>
          {status}
        </span>
        <span className="muted">started {fmtTime(detail.started_at ?? detail.created_at)}</span>
        <span data-testid="run-duration">{fmtDuration(run.durationMs ?? duration)}</span>
        <span data-testid="run-tokens">{tokensOf(detail.usage) || tokensOf(run.usage)} tokens</span>
        {active && (
          <button type="button" className="danger" data-testid="stop-button" onClick={() => stopRun(runId).catch((e) => setError(errorText(e)))}>
            ■ Stop
          </button>
        )}
      </div>
      <div className="banners">
        {(detail.tasks ?? [])
          .filter((t) => t.status === "pending" || !t.status)
          .map((t) => (
            <div className="banner waiting" key={t.token}>
              Waiting for a person at <code>{t.node_id}</code>: {t.message}{" "}
              <a href={paths.task(t.token)} target="_blank" rel="noreferrer" data-testid={`task-link-${t.node_id}`}>
                open the task form
              </a>
            </div>
          ))}
        {reruns.map((r) => (
          <div className="banner" key={`${r.id}-${r.attempt}`} data-testid={`rerun-${r.id}`}>
            <code>{r.id}</code> ran again as attempt {r.attempt}: {r.reason}
          </div>
        ))}
        {(run.error || detail.error) && (
          <div className="banner error" role="alert" data-testid="run-error">
            {run.error ?? detail.error}
          </div>
        )}
        {error && (
          <div className="banner error" role="alert">
            {error}
          </div>
        )}
      </div>
      <div className="editor-body no-palette">
        {doc ? (
          <FlowCanvas doc={doc} types={types.byName} run={run} selected={selected} readOnly onSelect={onSelect} onNodeActivate={(id) => setSelected(new Set([id]))} />
        ) : (
          <p className="muted">The flow document of this run is gone.</p>
        )}
        <aside className="side" aria-label="Run details">
          {nodeId && merged ? (
            <div className="inspector" data-testid="run-node-inspector">
              <div className="inspector-head">
                <h2>{nodeId}</h2>
                <button type="button" className="small" disabled={busy || active} onClick={retry} data-testid="retry-from-node">
                  Retry from here
                </button>
              </div>
              <dl>
                <dt>Started</dt>
                <dd>{fmtTime(nodeDetail?.started_at)}</dd>
                {(runNode?.reruns ?? []).map((r) => (
                  <Fragment key={r.attempt}>
                    <dt>Re-run</dt>
                    <dd data-testid="node-rerun">
                      attempt {r.attempt}: {r.reason}
                    </dd>
                  </Fragment>
                ))}
                {run.models?.[nodeId] && (
                  <>
                    <dt>Model</dt>
                    <dd data-testid="node-model">{modelText(run.models[nodeId])}</dd>
                  </>
                )}
                {nodeDetail?.reused && (
                  <>
                    <dt>Reused</dt>
                    <dd>output of the run it retries</dd>
                  </>
                )}
              </dl>
              <RunNodeDetails runNode={merged} inputs={nodeDetail?.inputs ?? nodeDetail?.input ?? (doc ? liveInputs(doc.edges, run, nodeId) : undefined) ?? null} />
            </div>
          ) : (
            <div className="inspector" data-testid="run-summary">
              <h2>Run</h2>
              <p className="muted">Select a node to see its inputs, output, error, attempts and timings.</p>
              <h3>Inputs</h3>
              <pre data-testid="run-inputs">{fmtJson(detail.inputs)}</pre>
              <h3>Outputs</h3>
              <pre data-testid="run-outputs">{fmtJson(run.outputs ?? detail.outputs)}</pre>
              <h3>Usage</h3>
              <pre>{fmtJson(detail.usage ?? run.usage ?? {})}</pre>
              {run.models && Object.keys(run.models).length > 0 && (
                <>
                  <h3>Model calls</h3>
                  <ul data-testid="run-models">
                    {Object.entries(run.models).map(([id, m]) => (
                      <li key={id}>
                        <code>{id}</code>: {modelText(m)}
                      </li>
                    ))}
                  </ul>
                </>
              )}
              {run.decisions && run.decisions.length > 0 && (
                <>
                  <h3>Decisions</h3>
                  <DecisionList decisions={run.decisions} />
                </>
              )}
            </div>
          )}
        </aside>
      </div>
    </div>
  );
}
