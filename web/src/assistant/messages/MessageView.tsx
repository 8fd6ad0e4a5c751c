/**
 * One message of the chat: the user's words, or the assistant's reply with whatever the turn
 * produced (progress, build tasks, markdown, cards, usage). Pure rendering: every action is a
 * callback the panel implements.
 */
import { thinkingLabel } from "../chat";
import type { ChatMessage } from "../types";
import { ComponentCard, FailureCard } from "./ComponentCard";
import { EditCarousel } from "./EditCarousel";
import { FileCards } from "./FileCards";
import { FlowProposalCard } from "./FlowProposalCard";
import { Markdown } from "./Markdown";
import { PlanCard } from "./PlanCard";
import { COMPONENT_STEPS, ProgressCard, Thinking } from "./ProgressCard";
import { TaskList } from "./TaskList";
import { RunMetricsLine, UsageBadge } from "./UsageBadge";

export interface MessageActions {
  readOnly: boolean;
  busy: boolean;
  addComponent: (className: string) => Promise<void>;
  retry: (m: ChatMessage) => void;
  proposal: (m: ChatMessage, action: "add" | "replace" | "dismiss") => void;
  edit: (m: ChatMessage, index: number, accept: boolean) => void;
  plan: (m: ChatMessage, action: "continue" | "dismiss" | "reset") => void;
  undo: (m: ChatMessage) => void;
}

const GENERATION_STEPS = ["generating_component", "extracting_code", "validating"] as const;
const CLASS_IN_CODE = /```(?:python|py)?\s*\n[\s\S]*?\bclass\s+([A-Za-z_]\w*)\s*\([^)]*Component[^)]*\)\s*:/;

/**
 * The component a reply offers: validated by the server, or (F17) found in the text when the
 * turn went through the generation steps and a code block defines a Component subclass.
 */
export function componentOf(m: ChatMessage): { className: string; code: string | null } | null {
  const c = m.complete;
  if (!c) return null;
  if (c.validated && c.class_name) return { className: c.class_name, code: c.component_code };
  if (c.validated || c.component_code || c.error) return null;
  const steps = new Set(m.steps ?? []);
  if (!GENERATION_STEPS.some((s) => steps.has(s))) return null;
  const found = CLASS_IN_CODE.exec(m.text);
  if (!found) return null;
  const code = /```(?:python|py)?\s*\n([\s\S]*?)```/.exec(m.text)?.[1] ?? null;
  return { className: found[1], code };
}

/** A component turn whose every attempt failed (F16). */
export function failedComponent(m: ChatMessage): boolean {
  const c = m.complete;
  return !!c && !c.validated && (!!c.component_code || !!c.error) && (c.validation_attempts ?? 0) > 0;
}

function UserMessage({ m }: { m: ChatMessage }) {
  return (
    <div className="assistant-msg" data-testid="assistant-message" data-role="user" data-status={m.status} data-id={m.id}>
      <div className="assistant-msg-text" data-testid="assistant-message-text">
        {m.text}
      </div>
    </div>
  );
}

function AssistantMessage({ m, actions }: { m: ChatMessage; actions: MessageActions }) {
  const streaming = m.status === "streaming";
  const failed = failedComponent(m);
  const component = failed ? null : componentOf(m);
  const showProgress = streaming && m.progress && COMPONENT_STEPS.has(m.progress.step);
  const c = m.complete;
  return (
    <div className="assistant-msg" data-testid="assistant-message" data-role="assistant" data-status={m.status} data-id={m.id}>
      <div className="assistant-msg-head">
        <span className="assistant-msg-who">Assistant</span>
        {c && <UsageBadge usage={c.usage} durationSeconds={c.duration_seconds} />}
        {m.status === "cancelled" && <span className="assistant-msg-status">stopped</span>}
      </div>
      {streaming && <Thinking label={thinkingLabel(m)} />}
      {showProgress && <ProgressCard progress={m.progress!} />}
      <TaskList tasks={m.tasks} />
      {m.plan && <PlanCard plan={m.plan} busy={actions.busy} onContinue={() => actions.plan(m, "continue")} onDismiss={() => actions.plan(m, "dismiss")} onReset={() => actions.plan(m, "reset")} />}
      {!failed && m.text && <Markdown text={m.text} testId="assistant-message-text" />}
      {failed && (
        <FailureCard error={c?.error} code={c?.component_code ?? null} attempts={c?.validation_attempts ?? 0} canRetry={!actions.busy} onRetry={() => actions.retry(m)} />
      )}
      {component && <ComponentCard className={component.className} code={component.code} readOnly={actions.readOnly} onAdd={() => actions.addComponent(component.className)} />}
      {m.edits && m.edits.length > 0 && <EditCarousel edits={m.edits} readOnly={actions.readOnly} onAccept={(i) => actions.edit(m, i, true)} onDismiss={(i) => actions.edit(m, i, false)} />}
      {m.proposal && (
        <FlowProposalCard
          proposal={m.proposal}
          readOnly={actions.readOnly}
          onAdd={() => actions.proposal(m, "add")}
          onReplace={() => actions.proposal(m, "replace")}
          onDismiss={() => actions.proposal(m, "dismiss")}
        />
      )}
      <FileCards files={m.files} />
      {c?.run_metrics && <RunMetricsLine metrics={c.run_metrics} />}
      {m.error && (
        <p className="assistant-error-text" role="alert" data-testid="assistant-message-error">
          {m.error}
        </p>
      )}
      {c?.restore_version_id != null && !actions.readOnly && (
        <button type="button" className="small assistant-undo" data-testid="assistant-undo" disabled={actions.busy} title="Put back the draft as it was before this reply changed it" onClick={() => actions.undo(m)}>
          ↶ Undo the assistant's changes
        </button>
      )}
    </div>
  );
}

export function MessageView({ m, actions }: { m: ChatMessage; actions: MessageActions }) {
  if (m.hidden) return null;
  return m.role === "user" ? <UserMessage m={m} /> : <AssistantMessage m={m} actions={actions} />;
}
