/** The build-task checklist (F37): what the assistant changed on the canvas, one row each, read-only. */
import type { BuildTask } from "../types";

const ICON: Record<BuildTask["action"], string> = { add_component: "+", connect: "⇄", configure: "⚙", remove_component: "−" };

export function TaskList({ tasks }: { tasks: BuildTask[] | undefined }) {
  if (!tasks?.length) return null;
  return (
    <ul className="assistant-tasks" data-testid="assistant-tasks" aria-label="Changes made on the canvas">
      {tasks.map((t, i) => (
        <li key={`${t.action}-${t.componentId}-${t.sourceId ?? ""}-${t.targetId ?? ""}-${i}`} className="assistant-task" data-testid="assistant-task" data-action={t.action}>
          <span className="assistant-task-icon" aria-hidden="true">
            {ICON[t.action]}
          </span>
          <span className="assistant-task-label">{t.label}</span>
          <span className="assistant-task-check" aria-label="done">
            ✓
          </span>
        </li>
      ))}
    </ul>
  );
}
