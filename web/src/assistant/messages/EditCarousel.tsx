/**
 * Field changes the assistant proposes (F29): one entry each, old → new, Accept or Dismiss. The
 * panel sends the continuation once every entry is decided (F30).
 */
import { useState } from "react";
import type { FieldEdit } from "../types";

export function shown(v: unknown): string {
  if (v === undefined || v === null || v === "") return "(empty)";
  return typeof v === "string" ? v : JSON.stringify(v, null, 2);
}

function Value({ value, className }: { value: unknown; className: string }) {
  const [more, setMore] = useState(false);
  const text = shown(value);
  const long = text.length > 160 || text.split("\n").length > 4;
  return (
    <div className={`assistant-edit-value ${className}`}>
      <pre className={long && !more ? "clamped" : undefined}>{text}</pre>
      {long && (
        <button type="button" className="link assistant-more" onClick={() => setMore((m) => !m)}>
          {more ? "Show less" : "Show more"}
        </button>
      )}
    </div>
  );
}

interface Props {
  edits: FieldEdit[];
  readOnly: boolean;
  onAccept: (index: number) => void;
  onDismiss: (index: number) => void;
}

export function EditCarousel({ edits, readOnly, onAccept, onDismiss }: Props) {
  if (!edits.length) return null;
  return (
    <div className="assistant-edits" aria-label="Proposed field changes">
      {edits.map((e, i) => (
        <div key={e.update.id || i} className={`assistant-card assistant-edit status-${e.status}`} data-testid="assistant-edit" data-status={e.status}>
          <div className="assistant-card-head">
            <span className="assistant-card-icon" aria-hidden="true">
              ✎
            </span>
            <strong>
              {e.update.component_id}.{e.update.field}
            </strong>
            {edits.length > 1 && (
              <span className="assistant-muted">
                {i + 1} of {edits.length}
              </span>
            )}
          </div>
          {e.update.description && <p className="assistant-muted">{e.update.description}</p>}
          <Value value={e.update.old_value} className="old" />
          <div className="assistant-edit-arrow" aria-hidden="true">
            ↓
          </div>
          <Value value={e.update.new_value} className="new" />
          {e.status === "pending" ? (
            <div className="assistant-card-actions">
              <button type="button" className="assistant-btn-ok" data-testid="assistant-edit-accept" disabled={readOnly} onClick={() => onAccept(i)}>
                Accept
              </button>
              <button type="button" className="small assistant-btn-quiet" data-testid="assistant-edit-dismiss" onClick={() => onDismiss(i)}>
                Dismiss
              </button>
            </div>
          ) : (
            <span className={e.status === "applied" ? "assistant-pill ok" : "assistant-dismissed"}>{e.status === "applied" ? "✓ Applied" : "Dismissed"}</span>
          )}
        </div>
      ))}
    </div>
  );
}
