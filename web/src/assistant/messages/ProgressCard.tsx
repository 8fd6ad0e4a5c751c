/**
 * What a running turn is doing: the thinking dots with their label (chat.ts's thinkingLabel, F20) and, for component
 * generation, the step with "Attempt X of Y" on retries (F14). Both go away when the turn ends.
 */
import type { ProgressEvent, ProgressStep } from "../types";

const STEP_TEXT: Partial<Record<ProgressStep, string>> = {
  classifying: "Reading your message",
  generating_component: "Writing the component",
  generating: "Writing the answer",
  extracting_code: "Reading the code out of the answer",
  validating: "Checking the code",
  validated: "Validated",
  validation_failed: "The code did not pass the check",
  retrying: "Trying again",
  generation_complete: "Component ready",
  orchestrating: "Planning the steps",
  generating_flow: "Building the flow",
  flow_proposal_ready: "The flow is ready",
  searching_components: "Looking for components",
  building_flow: "Building the flow",
  flow_built: "Flow built",
  flow_build_failed: "The flow could not be built",
  generating_document: "Writing the document",
};

/** Steps of the component pipeline: they get the progress card (F14); Q&A gets none (F13). */
export const COMPONENT_STEPS: ReadonlySet<ProgressStep> = new Set<ProgressStep>([
  "generating_component",
  "extracting_code",
  "validating",
  "validated",
  "validation_failed",
  "retrying",
  "generation_complete",
]);

export function stepText(p: ProgressEvent): string {
  return p.message && p.step !== "validation_failed" ? p.message : (STEP_TEXT[p.step] ?? p.step.replace(/_/g, " "));
}

/** "Attempt 2 of 3" on retries only, never above the maximum. */
export function attemptText(p: ProgressEvent): string | null {
  const max = Math.max(1, p.max_attempts || 1);
  const n = Math.min(Math.max(1, p.attempt || 1), max);
  return n > 1 ? `Attempt ${n} of ${max}` : null;
}

export function Thinking({ label }: { label: string }) {
  return (
    <div className="assistant-thinking" data-testid="assistant-thinking" role="status" aria-live="polite">
      <span className="assistant-dots" aria-hidden="true">
        <i />
        <i />
        <i />
      </span>
      {label}
    </div>
  );
}

export function ProgressCard({ progress }: { progress: ProgressEvent }) {
  const attempt = attemptText(progress);
  const failed = progress.step === "validation_failed";
  return (
    <div className={`assistant-progress${failed ? " failed" : ""}`} data-testid="assistant-progress" data-step={progress.step}>
      <span className="assistant-progress-step">{stepText(progress)}</span>
      {attempt && <span className="assistant-progress-attempt">{attempt}</span>}
      {failed && progress.error && <div className="assistant-progress-error">{progress.error}</div>}
    </div>
  );
}
