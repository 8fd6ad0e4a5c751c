/**
 * `/skip-all` (F34): a local command, never sent to the server, that toggles "apply everything
 * without asking". Only the exact trimmed text is the command; the preference is stored as the
 * literal "true" and anything else (absent, garbage, blocked storage) counts as off.
 */
import { readString, STORAGE_KEYS, writeString } from "./storage";

export const SKIP_ALL_COMMAND = "/skip-all";

export function isSkipAllCommand(text: string): boolean {
  return text.trim() === SKIP_ALL_COMMAND;
}

export function readSkipAll(): boolean {
  return readString(STORAGE_KEYS.skipAll) === "true";
}

/** Persist the preference (a no-op when storage is blocked: the panel keeps it in memory). */
export function writeSkipAll(on: boolean): void {
  writeString(STORAGE_KEYS.skipAll, on ? "true" : "false");
}

/** The inline assistant message that confirms a toggle. */
export function skipAllConfirmation(on: boolean): string {
  return on
    ? "Skip-all mode enabled: plans, flow proposals and components are applied without asking. Send /skip-all again to turn it off."
    : "Skip-all mode disabled: plans and flow proposals wait for your approval again.";
}
