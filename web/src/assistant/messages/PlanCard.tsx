/**
 * The plan the assistant proposes before a large build (F31-F33). Continue approves it; Dismiss
 * turns it into "refining" (dashed, nothing sent: the next message refines it); Reset ends it.
 */
import type { PlanCard as Plan } from "../types";
import { Markdown } from "./Markdown";

interface Props {
  plan: Plan;
  busy: boolean;
  onContinue: () => void;
  onDismiss: () => void;
  onReset: () => void;
}

export function PlanCard({ plan, busy, onContinue, onDismiss, onReset }: Props) {
  const { status } = plan;
  const open = status === "pending" || status === "refining";
  return (
    <div className={`assistant-card assistant-plan status-${status}`} data-testid="assistant-plan" data-status={status}>
      <div className="assistant-card-head">
        <span className="assistant-card-icon" aria-hidden="true">
          ≡
        </span>
        {status === "refining" ? (
          <span>
            <strong>Refining plan</strong> <span className="assistant-muted">Send your changes below; the plan comes along as context.</span>
          </span>
        ) : (
          <strong>Plan</strong>
        )}
        {status === "approved" && <span className="assistant-pill ok">Approved</span>}
      </div>
      <div className={status === "dismissed" ? "assistant-struck" : undefined}>
        <Markdown text={plan.markdown} />
      </div>
      {open && (
        <div className="assistant-card-actions">
          <button type="button" className="assistant-btn-ok" data-testid="assistant-plan-continue" disabled={busy} onClick={onContinue}>
            Continue
          </button>
          {status === "pending" ? (
            <button type="button" className="small assistant-btn-quiet" data-testid="assistant-plan-dismiss" onClick={onDismiss}>
              Dismiss
            </button>
          ) : (
            <button type="button" className="small assistant-btn-quiet" data-testid="assistant-plan-reset" title="Drop this plan: the next message starts fresh" onClick={onReset}>
              ↺ Reset
            </button>
          )}
        </div>
      )}
      {status === "dismissed" && <span className="assistant-dismissed">Dismissed</span>}
    </div>
  );
}
