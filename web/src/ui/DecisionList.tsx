/** The edge-LLM decider's steps of a run: what it chose (with the typed inputs), skipped and why,
 * and the replies it had to be re-asked about. */
import type { DecisionEntry } from "../state/run";
import { fmtJson } from "./format";

export function DecisionList({ decisions }: { decisions: DecisionEntry[] }) {
  return (
    <ol className="decisions" data-testid="run-decisions">
      {decisions.map((d, i) => (
        <li key={i} data-testid={`decision-${d.step}`} className={d.failed ? "failed" : undefined}>
          <div>
            <strong>Step {d.step}</strong>
            {d.at ? <span className="muted"> after {d.at}</span> : null}
            {d.failed ? (
              <span className="error"> no valid decision: the run failed</span>
            ) : (
              <>
                {": "}
                {d.mode === "stop" ? "stop" : `${d.mode === "parallel" ? "run in parallel " : "run "}${(d.next ?? []).map((n) => n.node).join(", ") || "nothing"}`}
                {d.skips && d.skips.length > 0 && <span className="muted">; skip {d.skips.join(", ")}</span>}
              </>
            )}
          </div>
          {d.reason && <div className="muted small-text">{d.reason}</div>}
          {(d.next ?? []).some((n) => n.input !== undefined) && (
            <details>
              <summary>Inputs</summary>
              <pre>{fmtJson(Object.fromEntries((d.next ?? []).filter((n) => n.input !== undefined).map((n) => [n.node, n.input])))}</pre>
            </details>
          )}
          {d.rejected && d.rejected.length > 0 && (
            <details open={d.failed} data-testid={`decision-${d.step}-rejected`}>
              <summary>
                {d.rejected.length} rejected repl{d.rejected.length === 1 ? "y" : "ies"}
              </summary>
              {d.rejected.map((r, j) => (
                <div key={j}>
                  <pre>{r.reply}</pre>
                  <ul>
                    {r.problems.map((p) => (
                      <li key={p} className="error">
                        {p}
                      </li>
                    ))}
                  </ul>
                </div>
              ))}
            </details>
          )}
        </li>
      ))}
    </ol>
  );
}
