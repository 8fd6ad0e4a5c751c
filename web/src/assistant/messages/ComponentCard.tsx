/**
 * A generated component (F15): Add to canvas places a node of the registered component at the
 * centre of the view; View code shows what was validated. And its counterpart when every attempt
 * failed (F16): plait's own words, the details collapsed, View code and Try again, no Add.
 */
import { useState } from "react";
import { CodeBlock } from "./Markdown";

export function ComponentCard({ className, code, readOnly, onAdd }: { className: string; code: string | null; readOnly: boolean; onAdd: () => Promise<void> }) {
  const [showCode, setShowCode] = useState(false);
  const [busy, setBusy] = useState(false);
  const [added, setAdded] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const add = async () => {
    setBusy(true);
    setError(null);
    try {
      await onAdd();
      setAdded(true);
      setTimeout(() => setAdded(false), 3000);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="assistant-card assistant-component" data-testid="assistant-component-card" data-class-name={className}>
      <div className="assistant-card-head">
        <span className="assistant-card-icon" aria-hidden="true">
          ◆
        </span>
        <strong>{className}</strong>
        <span className="assistant-pill ok">Validated</span>
      </div>
      <div className="assistant-card-actions">
        <button
          type="button"
          className="assistant-btn-ok"
          data-testid="assistant-component-add"
          disabled={busy || readOnly}
          title={readOnly ? "You can view this flow but not change it" : "Place a node of this component in the middle of the canvas"}
          onClick={add}
        >
          {added ? "Added ✓" : "Add to canvas"}
        </button>
        {code && (
          <button type="button" className="small" data-testid="assistant-component-view-code" aria-expanded={showCode} onClick={() => setShowCode((s) => !s)}>
            {showCode ? "Hide code" : "View code"}
          </button>
        )}
      </div>
      {error && (
        <p className="assistant-error-text" role="alert">
          {error}
        </p>
      )}
      {showCode && code && <CodeBlock code={code} testId="assistant-component-code" />}
    </div>
  );
}

export const FAILURE_TEXT = "The selected model could not write a component that passes the checks. Try again, or pick a more capable model in the list above.";

export function FailureCard({ error, code, attempts, onRetry, canRetry }: { error?: string; code: string | null; attempts: number; onRetry: () => void; canRetry: boolean }) {
  const [showCode, setShowCode] = useState(false);
  return (
    <div className="assistant-card assistant-failed" data-testid="assistant-component-failed">
      <div className="assistant-card-head">
        <span className="assistant-card-icon err" aria-hidden="true">
          ✕
        </span>
        <strong>Component generation failed</strong>
        {attempts > 0 && <span className="assistant-muted">after {attempts} {attempts === 1 ? "attempt" : "attempts"}</span>}
      </div>
      <p>{FAILURE_TEXT}</p>
      {error && (
        <details className="assistant-error-details" data-testid="assistant-error-details">
          <summary>Error details</summary>
          <pre>{error}</pre>
        </details>
      )}
      <div className="assistant-card-actions">
        <button type="button" className="primary small" data-testid="assistant-try-again" disabled={!canRetry} onClick={onRetry}>
          Try again
        </button>
        {code && (
          <button type="button" className="small" data-testid="assistant-component-view-code" aria-expanded={showCode} onClick={() => setShowCode((s) => !s)}>
            {showCode ? "Hide code" : "View code"}
          </button>
        )}
      </div>
      {showCode && code && <CodeBlock code={code} testId="assistant-component-code" />}
    </div>
  );
}
