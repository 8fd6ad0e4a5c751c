/**
 * The chats the browser keeps (F10): at most 10 sessions, newest first, under one localStorage key.
 * The server keeps the model's context separately (decision 8); this is only what the user saw.
 *
 * Stored sessions stay small: progress is stripped, a message that was still streaming is stored
 * as cancelled, big file contents are dropped, and a session over its size budget loses its oldest
 * messages. When the storage is full, the oldest sessions go first. Nothing here throws.
 */
import type { ChatMessage, StoredSession } from "./types";
import { readJson, STORAGE_KEYS, writeJson } from "./storage";

export const MAX_SESSIONS = 10;
/** A stored session's budget, in JSON characters (10 of them stay well under a 5 MB quota). */
export const SESSION_CHAR_LIMIT = 200_000;
/** File contents longer than this are not stored (Open then says there is no preview). */
export const FILE_CONTENT_LIMIT = 20_000;
const TITLE_LIMIT = 60;

/** A fresh session id, `agentic_<uuid>` (F9). */
export function newSessionId(): string {
  return `agentic_${uuid()}`;
}

function uuid(): string {
  const c: Crypto | undefined = globalThis.crypto;
  if (c && typeof c.randomUUID === "function") return c.randomUUID();
  const bytes = new Uint8Array(16);
  if (c && typeof c.getRandomValues === "function") c.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A message as it is stored: no progress, streaming -> cancelled, big file contents dropped. */
export function storedMessage(m: ChatMessage): ChatMessage {
  const out: ChatMessage = { ...m };
  delete out.progress;
  if (out.status === "streaming") out.status = "cancelled";
  if (out.files?.some((f) => f.content !== undefined && f.content.length > FILE_CONTENT_LIMIT)) {
    out.files = out.files.map((f) => {
      if (f.content === undefined || f.content.length <= FILE_CONTENT_LIMIT) return f;
      const small = { ...f };
      delete small.content;
      return small;
    });
  }
  return out;
}

/** The session's title: its first visible user message, shortened. */
export function sessionTitle(messages: ChatMessage[]): string {
  const first = messages.find((m) => m.role === "user" && !m.hidden && m.text.trim());
  const t = (first?.text ?? "").trim().replace(/\s+/g, " ");
  if (!t) return "New session";
  return t.length > TITLE_LIMIT ? `${t.slice(0, TITLE_LIMIT - 1)}…` : t;
}

/** The session as stored: stripped messages, oldest ones dropped until it fits `limit` characters. */
export function compactSession(session: StoredSession, limit: number = SESSION_CHAR_LIMIT): StoredSession {
  let messages = session.messages.map(storedMessage);
  const size = (ms: ChatMessage[]) => JSON.stringify({ ...session, messages: ms }).length;
  while (messages.length > 1 && size(messages) > limit) messages = messages.slice(1);
  if (messages.length === 1 && size(messages) > limit) {
    // One huge message: keep its words (cut), drop the heavy parts.
    const m = { ...messages[0] };
    delete m.proposal;
    delete m.files;
    if (m.complete) m.complete = { ...m.complete, component_code: null };
    m.text = m.text.slice(0, Math.max(0, limit - 2_000));
    messages = [m];
  }
  return { ...session, messages };
}

function isSession(x: unknown): x is StoredSession {
  const s = x as StoredSession;
  return !!s && typeof s === "object" && typeof s.id === "string" && Array.isArray(s.messages);
}

/** Stored sessions, newest first (at most 10; malformed entries skipped). */
export function loadSessions(): StoredSession[] {
  const raw = readJson<unknown>(STORAGE_KEYS.sessions, []);
  if (!Array.isArray(raw)) return [];
  return raw
    .filter(isSession)
    .map((s) => ({ ...s, title: typeof s.title === "string" ? s.title : sessionTitle(s.messages), updatedAt: Number(s.updatedAt) || 0 }))
    .sort((a, b) => b.updatedAt - a.updatedAt)
    .slice(0, MAX_SESSIONS);
}

/** `sessions` with `session` put first (replacing the same id), capped at 10. Pure. */
export function upsertSession(sessions: StoredSession[], session: StoredSession): StoredSession[] {
  return [session, ...sessions.filter((s) => s.id !== session.id)].slice(0, MAX_SESSIONS);
}

function persist(list: StoredSession[]): StoredSession[] {
  let kept = list;
  // A full storage: drop the oldest sessions until it fits (the newest always tries last alone).
  while (!writeJson(STORAGE_KEYS.sessions, kept) && kept.length > 1) kept = kept.slice(0, -1);
  return kept;
}

/**
 * Save a session's messages (an empty chat is not stored). Returns the list as it now is, newest
 * first; when storage is blocked, the list it would have stored.
 */
export function saveSession(id: string, messages: ChatMessage[], now: number = Date.now()): StoredSession[] {
  const current = loadSessions();
  if (!messages.some((m) => !m.hidden)) return current;
  const session = compactSession({ id, title: sessionTitle(messages), updatedAt: now, messages });
  return persist(upsertSession(current, session));
}

/** One stored session, or null. */
export function findSession(id: string): StoredSession | null {
  return loadSessions().find((s) => s.id === id) ?? null;
}

/** Forget one stored session; returns the remaining list. */
export function deleteSession(id: string): StoredSession[] {
  const next = loadSessions().filter((s) => s.id !== id);
  writeJson(STORAGE_KEYS.sessions, next);
  return next;
}
