/**
 * Shell-style recall of the last inputs (F40): Up walks back from the newest entry and stops at
 * the oldest, Down walks forward and gives the draft back once. The list is stored newest first;
 * with blocked storage it is simply empty and nothing throws (M-S75).
 *
 * Navigation is pure (`historyUp`, `historyDown`, `handleHistoryKey`) so the textarea only feeds
 * it the value, the caret and the key.
 */
import { readJson, STORAGE_KEYS, writeJson } from "./storage";

export const INPUT_HISTORY_LIMIT = 10;

/** The stored history, newest first (only strings; at most the limit). */
export function loadInputHistory(): string[] {
  const raw = readJson<unknown>(STORAGE_KEYS.inputHistory, []);
  if (!Array.isArray(raw)) return [];
  return raw.filter((x): x is string => typeof x === "string").slice(0, INPUT_HISTORY_LIMIT);
}

/** `history` with a sent `text` added: trimmed, empty ignored, not repeated when it is the latest. */
export function pushInputHistory(history: string[], text: string): string[] {
  const t = text.trim();
  if (!t || history[0] === t) return history;
  return [t, ...history].slice(0, INPUT_HISTORY_LIMIT);
}

/** Record a sent text in storage; returns the new history (in memory even when storage fails). */
export function recordInput(text: string, history: string[] = loadInputHistory()): string[] {
  const next = pushInputHistory(history, text);
  if (next !== history) writeJson(STORAGE_KEYS.inputHistory, next);
  return next;
}

/** Where a recall stands: `index` -1 is "not recalling"; `draft` is what was typed before the first Up. */
export interface Recall {
  index: number;
  draft: string;
}

export const NO_RECALL: Recall = { index: -1, draft: "" };

export interface RecallStep {
  recall: Recall;
  text: string;
}

/** Up: the next older entry (the draft is saved at the first Up); at the oldest it stays. Null: nothing to recall. */
export function historyUp(history: string[], recall: Recall, current: string): RecallStep | null {
  if (!history.length) return null;
  if (recall.index < 0) return { recall: { index: 0, draft: current }, text: history[0] };
  const index = Math.min(recall.index + 1, history.length - 1);
  return { recall: { ...recall, index }, text: history[index] };
}

/** Down: the next newer entry, then the draft once; null when not recalling (no change). */
export function historyDown(history: string[], recall: Recall): RecallStep | null {
  if (recall.index < 0) return null;
  if (recall.index === 0 || !history.length) return { recall: NO_RECALL, text: recall.draft };
  const index = Math.min(recall.index - 1, history.length - 1);
  return { recall: { ...recall, index }, text: history[index] };
}

/** Is the caret (a collapsed selection) on the first line of `value`? */
export function caretOnFirstLine(value: string, caret: number): boolean {
  return !value.slice(0, caret).includes("\n");
}

/** Is the caret on the last line of `value`? */
export function caretOnLastLine(value: string, caret: number): boolean {
  return !value.slice(caret).includes("\n");
}

export interface HistoryKeyResult extends RecallStep {
  /** Put the caret here (the end of the recalled text). */
  caret: number;
}

/**
 * An arrow key in the input: the recalled text and where the caret goes, or null to let the key
 * move the caret as usual (a selection, the caret not on the first/last line, nothing to recall).
 */
export function handleHistoryKey(
  key: string,
  value: string,
  selectionStart: number,
  selectionEnd: number,
  history: string[],
  recall: Recall,
): HistoryKeyResult | null {
  if (selectionStart !== selectionEnd) return null;
  let step: RecallStep | null = null;
  if (key === "ArrowUp") {
    if (!caretOnFirstLine(value, selectionStart)) return null;
    step = historyUp(history, recall, value);
  } else if (key === "ArrowDown") {
    if (!caretOnLastLine(value, selectionStart)) return null;
    step = historyDown(history, recall);
  }
  return step ? { ...step, caret: step.text.length } : null;
}
