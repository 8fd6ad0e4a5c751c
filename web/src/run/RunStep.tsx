/**
 * "Run this step": runs the selected node alone on the server, with the inputs it had in the last
 * run (or inputs pinned here, kept in the browser per flow and node), and shows its output. The
 * step's run is watched like any run (its own state: the canvas keeps showing the last full run).
 */
import { useEffect, useReducer, useRef, useState } from "react";
import { request } from "../api";
import { watchRun, type Watch } from "../live";
import { linkProps, paths } from "../router";
import { idleRun, isActive, normalizeEvent, reduceRun, startingRun, type RunState } from "../state/run";
import { errorText, fmtDuration, fmtJson } from "../ui/format";
import { LazyOutput } from "./LazyOutput";
import { loadPinned, savePinned } from "./storage";
import "./run.css";

export interface StepStarted {
  id: string;
  node_id: string;
  from_run: string | null;
  stubs: string[];
  missing: string[];
  pinned: boolean;
}

/** POST /flows/{id}/nodes/{node}/run */
export function startStep(flowId: string, nodeId: string, body: { from_run?: string | null; pinned?: Record<string, any> | null }): Promise<StepStarted> {
  return request<StepStarted>("POST", `/api/v1/flows/${encodeURIComponent(flowId)}/nodes/${encodeURIComponent(nodeId)}/run`, body);
}

type Action = { kind: "reset"; state: RunState } | { kind: "event"; raw: any };
function reducer(state: RunState, a: Action): RunState {
  if (a.kind === "reset") return a.state;
  const e = normalizeEvent(a.raw);
  if (!e || (state.runId && e.runId && e.runId !== state.runId)) return state;
  return reduceRun(state, e);
}

export interface RunStepProps {
  flowId: string;
  nodeId: string;
  /** the editor's last run (its outputs feed the node); none: the flow's newest run */
  lastRunId?: string | null;
  /** what the node received in that run, per input port (prefills the pinned inputs) */
  lastInputs?: Record<string, any>;
  disabled?: boolean;
  /** save pending edits first (the server runs the saved draft) */
  beforeRun?: () => Promise<void> | void;
}

export function RunStep({ flowId, nodeId, lastRunId, lastInputs, disabled, beforeRun }: RunStepProps) {
  const [run, dispatch] = useReducer(reducer, undefined, idleRun);
  const [error, setError] = useState<string | null>(null);
  const [info, setInfo] = useState<StepStarted | null>(null);
  const [pinned, setPinned] = useState<Record<string, any> | undefined>(() => loadPinned(flowId, nodeId));
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState("");
  const [textError, setTextError] = useState<string | null>(null);
  const watch = useRef<Watch | null>(null);
  useEffect(() => () => watch.current?.close(), []);

  const go = async () => {
    setError(null);
    watch.current?.close();
    dispatch({ kind: "reset", state: startingRun() });
    try {
      await beforeRun?.();
      const started = await startStep(flowId, nodeId, { from_run: pinned ? null : lastRunId ?? null, pinned: pinned ?? null });
      setInfo(started);
      dispatch({ kind: "event", raw: { type: "run_id", run_id: started.id } });
      watch.current = await watchRun(started.id, (raw) => dispatch({ kind: "event", raw }));
    } catch (e) {
      dispatch({ kind: "reset", state: idleRun() });
      setError(errorText(e));
    }
  };

  const startEditing = () => {
    setText(fmtJson(pinned ?? lastInputs ?? { in: null }));
    setTextError(null);
    setEditing(true);
  };
  const pin = () => {
    try {
      const v = JSON.parse(text);
      if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error('an object of input ports, e.g. {"in": ...}');
      savePinned(flowId, nodeId, v);
      setPinned(v);
      setEditing(false);
    } catch (e) {
      setTextError(`Not pinned: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  const unpin = () => {
    savePinned(flowId, nodeId, undefined);
    setPinned(undefined);
    setEditing(false);
  };

  const node = run.nodes[nodeId] ?? Object.entries(run.nodes).find(([k]) => k.toLowerCase() === nodeId.toLowerCase())?.[1];
  const busy = isActive(run);
  return (
    <section className="run-step" data-testid="run-step-panel" aria-label="Run this step">
      <div className="buttons">
        <button type="button" className="small primary" onClick={go} disabled={disabled || busy} data-testid="run-step">
          ▶ Run this step
        </button>
        {!editing && (
          <button type="button" className="small" onClick={startEditing} disabled={disabled} data-testid="run-step-pin-edit">
            {pinned ? "Edit pinned inputs" : "Pin inputs…"}
          </button>
        )}
        {pinned && !editing && (
          <button type="button" className="small" onClick={unpin} data-testid="run-step-unpin">
            Unpin
          </button>
        )}
      </div>
      <p className="muted small-text" data-testid="run-step-source">
        {pinned ? "Runs with the pinned inputs." : "Runs only this node, with what it received in the last run."}
      </p>
      {editing && (
        <div>
          <label htmlFor={`pin-${nodeId}`} className="small-text">
            Inputs per port (JSON)
          </label>
          <textarea id={`pin-${nodeId}`} data-testid="run-step-pin-text" value={text} onChange={(e) => setText(e.target.value)} spellCheck={false} />
          {textError && <p className="run-step-error small-text">{textError}</p>}
          <div className="buttons">
            <button type="button" className="small" onClick={pin} data-testid="run-step-pin">
              Pin
            </button>
            <button type="button" className="small" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </div>
      )}
      {error && (
        <p className="run-step-error" role="alert" data-testid="run-step-error">
          {error}
        </p>
      )}
      {run.status !== "idle" && (
        <div className="run-step-output" data-testid="run-step-result" data-status={node?.status ?? run.status}>
          <div className="run-facts small-text">
            <span className={`status-pill status-${node?.status ?? run.status}`} data-testid="run-step-status">
              {node?.status ?? run.status}
            </span>
            {node?.durationMs !== undefined && <span>{fmtDuration(node.durationMs)}</span>}
            {run.runId && (
              <a {...linkProps(paths.run(run.runId))} data-testid="run-step-inspect">
                open the step's run
              </a>
            )}
          </div>
          {info?.missing.length ? <p className="muted small-text">No earlier output of: {info.missing.join(", ")}</p> : null}
          {node?.preview && node.status === "running" && <pre>{node.preview}</pre>}
          {node?.error && <pre className="run-step-error">{node.error}</pre>}
          {!node?.error && run.error && <pre className="run-step-error">{run.error}</pre>}
          {node?.status === "ok" && <LazyOutput value={node.output} testId="run-step-output" />}
        </div>
      )}
    </section>
  );
}
