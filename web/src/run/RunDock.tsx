/**
 * The editor's run dock, under the canvas: the result of the last run (opens by itself when a run
 * ends; closable) and, for flows started by a prompt, the chat playground. It shows the editor's
 * own run (state and start function come from the editor), so the canvas, the toolbar and the
 * dock always speak of the same run.
 */
import { useEffect, useMemo, useRef, useState } from "react";
import { isActive, type RunState } from "../state/run";
import type { FlowDocument } from "../types";
import { Playground } from "./Playground";
import { promptField } from "./playground";
import { ResultPanel } from "./ResultPanel";
import "./run.css";

export interface RunDockProps {
  flowId: string;
  doc: FlowDocument | null;
  run: RunState;
  onRun: (inputs: Record<string, any>) => Promise<void> | void;
  readOnly?: boolean;
}

type Tab = "result" | "playground";

export function RunDock({ flowId, doc, run, onRun, readOnly }: RunDockProps) {
  const field = useMemo(() => promptField(doc), [doc]);
  const [open, setOpen] = useState(false);
  const [tab, setTab] = useState<Tab>("result");
  const shownFor = useRef<string | null>(null);
  const ended = !isActive(run) && run.status !== "idle";

  // a run that ends opens the dock on its result (once per run; closing keeps it closed)
  useEffect(() => {
    if (!ended || !run.runId || shownFor.current === run.runId) return;
    shownFor.current = run.runId;
    setOpen(true);
    setTab((t) => (t === "playground" && field ? t : "result"));
  }, [ended, run.runId, field]);

  if (!open)
    return (
      <div className="run-dock-bar">
        {field && (
          <button
            type="button"
            className="small"
            data-testid="open-playground"
            onClick={() => {
              setTab("playground");
              setOpen(true);
            }}
          >
            💬 Playground
          </button>
        )}
        {run.status !== "idle" && (
          <button
            type="button"
            className="small"
            data-testid="open-result"
            onClick={() => {
              setTab("result");
              setOpen(true);
            }}
          >
            Result of the last run
          </button>
        )}
      </div>
    );

  return (
    <section className="run-dock" aria-label="Run result" data-testid="run-dock">
      <div className="run-dock-tabs" role="tablist">
        <button type="button" role="tab" aria-selected={tab === "result"} className={tab === "result" ? "active" : ""} onClick={() => setTab("result")} data-testid="dock-tab-result">
          Result
        </button>
        {field && (
          <button type="button" role="tab" aria-selected={tab === "playground"} className={tab === "playground" ? "active" : ""} onClick={() => setTab("playground")} data-testid="dock-tab-playground">
            Playground
          </button>
        )}
        <span className="run-dock-spacer" />
        <button type="button" className="small" aria-label="Close the run panel" onClick={() => setOpen(false)} data-testid="run-dock-close">
          ✕
        </button>
      </div>
      <div className="run-dock-body">
        {tab === "playground" && field ? (
          <Playground flowId={flowId} field={field} run={run} onRun={onRun} disabled={readOnly} />
        ) : run.status === "idle" ? (
          <p className="muted">Run the flow to see its result here.</p>
        ) : (
          <ResultPanel run={run} />
        )}
      </div>
    </section>
  );
}
