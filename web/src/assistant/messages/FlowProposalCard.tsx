/**
 * A whole flow the assistant proposes (F25-F28): a picture, its counts, and Add (merge beside what
 * is there), Replace or Dismiss. Applied shows "Added to canvas" until the panel turns it back to
 * pending; dismissed keeps the picture with a muted label. Never applied by a timer.
 */
import type { FlowProposal } from "../types";
import { MiniFlow } from "./MiniFlow";

interface Props {
  proposal: FlowProposal;
  readOnly: boolean;
  onAdd: () => void;
  onReplace: () => void;
  onDismiss: () => void;
}

export function FlowProposalCard({ proposal, readOnly, onAdd, onReplace, onDismiss }: Props) {
  const { status } = proposal;
  return (
    <div className={`assistant-card assistant-proposal status-${status}`} data-testid="assistant-flow-proposal" data-status={status}>
      <div className="assistant-card-head">
        <span className="assistant-card-icon" aria-hidden="true">
          ▦
        </span>
        <strong>{proposal.name || "Proposed flow"}</strong>
        <span className="assistant-muted">
          {proposal.nodeCount} {proposal.nodeCount === 1 ? "step" : "steps"} · {proposal.edgeCount} {proposal.edgeCount === 1 ? "connection" : "connections"}
        </span>
      </div>
      <MiniFlow flow={proposal.flow} />
      {status === "pending" && (
        <div className="assistant-card-actions">
          <button type="button" className="assistant-btn-ok" data-testid="assistant-flow-add-button" disabled={readOnly} title="Add this flow beside what is on the canvas" onClick={onAdd}>
            Add to canvas
          </button>
          <button type="button" className="small" data-testid="assistant-flow-replace-button" disabled={readOnly} title="Replace everything on the canvas with this flow (undo brings it back)" onClick={onReplace}>
            Replace canvas
          </button>
          <button type="button" className="small assistant-btn-quiet" data-testid="assistant-flow-dismiss-button" onClick={onDismiss}>
            Dismiss
          </button>
        </div>
      )}
      {status === "applied" && (
        <span className="assistant-pill ok" data-testid="assistant-flow-applied">
          ✓ Added to canvas
        </span>
      )}
      {status === "dismissed" && (
        <span className="assistant-dismissed" data-testid="assistant-flow-dismissed">
          Dismissed
        </span>
      )}
    </div>
  );
}
