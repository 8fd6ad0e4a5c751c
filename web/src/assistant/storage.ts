/**
 * localStorage for the assistant panel, made safe: private browsing, a disabled or full storage
 * and corrupt values all behave as "nothing stored", and nothing here ever throws (M-T39, M-S75).
 * The panel keeps working in memory; it just forgets on reload.
 */

/** The keys the panel uses (the contract's list). */
export const STORAGE_KEYS = {
  model: "plait-assistant-selected-model",
  sessions: "plait-assistant-sessions",
  inputHistory: "plait-assistant-input-history",
  skipAll: "plait-assistant-skip-all",
  size: "plait-assistant-size",
} as const;

function store(): Storage | null {
  try {
    return typeof localStorage === "undefined" ? null : localStorage;
  } catch {
    return null; // some browsers throw on the mere access when storage is blocked
  }
}

/** The raw string under `key`, or null (absent, blocked, or failing). */
export function readString(key: string): string | null {
  try {
    return store()?.getItem(key) ?? null;
  } catch {
    return null;
  }
}

/** Store a string; false when the storage refused it (blocked, quota). */
export function writeString(key: string, value: string): boolean {
  try {
    const s = store();
    if (!s) return false;
    s.setItem(key, value);
    return true;
  } catch {
    return false;
  }
}

export function removeKey(key: string): void {
  try {
    store()?.removeItem(key);
  } catch {
    /* blocked storage: nothing to remove */
  }
}

/** The JSON value under `key`, or `fallback` when absent, unparsable or blocked. */
export function readJson<T>(key: string, fallback: T): T {
  const raw = readString(key);
  if (raw === null) return fallback;
  try {
    const value = JSON.parse(raw);
    return value === null || value === undefined ? fallback : (value as T);
  } catch {
    return fallback;
  }
}

/** Store a value as JSON; false when it could not be stored. */
export function writeJson(key: string, value: unknown): boolean {
  let raw: string;
  try {
    raw = JSON.stringify(value);
  } catch {
    return false;
  }
  return writeString(key, raw);
}
