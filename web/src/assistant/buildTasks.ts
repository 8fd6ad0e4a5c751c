/**
 * The build-task checklist (F37): each live add, remove, connect and configure becomes one row of
 * its message, in arrival order, de-duplicated on (action, componentId, sourceId, targetId).
 * Whole-flow proposals (`set_flow`) and field edits (`edit_field`) are never rows.
 */
import type { BuildTask, FlowUpdate } from "./types";

/** The row an update makes, or null when it makes none. */
export function taskFor(update: FlowUpdate): BuildTask | null {
  switch (update.action) {
    case "add_component":
      return update.node?.id ? { action: "add_component", componentId: update.node.id, label: `Added ${update.node.id}` } : null;
    case "remove_component":
      return update.component_id ? { action: "remove_component", componentId: update.component_id, label: `Removed ${update.component_id}` } : null;
    case "connect": {
      const e = update.edge;
      if (!e?.source || !e?.target) return null;
      return { action: "connect", componentId: e.target, sourceId: e.source, targetId: e.target, label: `Wired ${e.source} → ${e.target}` };
    }
    case "configure":
      return update.component_id ? { action: "configure", componentId: update.component_id, label: `Configured ${update.component_id}` } : null;
    default:
      return null;
  }
}

function key(t: BuildTask): string {
  return JSON.stringify([t.action, t.componentId, t.sourceId ?? null, t.targetId ?? null]);
}

/** `tasks` with the update's row added (the same array when it makes none or is a duplicate). */
export function addTask(tasks: BuildTask[], update: FlowUpdate): BuildTask[] {
  const row = taskFor(update);
  if (!row) return tasks;
  const k = key(row);
  return tasks.some((t) => key(t) === k) ? tasks : [...tasks, row];
}
