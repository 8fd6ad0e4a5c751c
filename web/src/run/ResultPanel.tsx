/** The result of the editor's last run, on screen when it ends: status, the run's duration and
 * tokens, its error, and each output rendered (text as markdown, JSON as a tree, files as
 * downloads), with a link to the run inspector. */
import { linkProps, paths } from "../router";
import { tokensOf, type RunState } from "../state/run";
import { fmtDuration } from "../ui/format";
import { LazyOutput } from "./LazyOutput";

export function RunFacts({ run }: { run: Pick<RunState, "status" | "durationMs" | "usage" | "runId"> }) {
  const tokens = tokensOf(run.usage);
  return (
    <div className="run-facts">
      <span className={`status-pill status-${run.status}`} data-testid="run-result-status" data-status={run.status}>
        {run.status}
      </span>
      {run.durationMs !== undefined && <span data-testid="run-result-duration">{fmtDuration(run.durationMs)}</span>}
      <span className="muted" data-testid="run-result-tokens">
        {tokens} tokens
      </span>
      {run.runId && (
        <a {...linkProps(paths.run(run.runId))} data-testid="run-result-inspect">
          Open in the run inspector
        </a>
      )}
    </div>
  );
}

export function ResultPanel({ run }: { run: RunState }) {
  const outputs = run.outputs ?? {};
  const names = Object.keys(outputs);
  return (
    <div className="run-result" data-testid="run-result">
      <RunFacts run={run} />
      {run.error && (
        <p className="run-result-error" role="alert" data-testid="run-result-error">
          {run.error}
        </p>
      )}
      {run.status === "waiting" && <p className="muted">The run waits for a person (see the task link above).</p>}
      {run.status === "completed" && !names.length && <p className="muted">The run finished without outputs (add an Output node to give it one).</p>}
      {names.map((name) => (
        <section key={name} className="run-output" data-testid={`run-result-output-${name}`}>
          {names.length > 1 || name !== "output" ? <h4>{name}</h4> : null}
          <LazyOutput value={outputs[name]} testId={`run-result-value-${name}`} />
        </section>
      ))}
    </div>
  );
}
