/**
 * The assistant's HTTP calls: one streamed turn (SSE over a POST, so the session cookie or the API
 * key header goes along), the session reset, and the model configuration.
 *
 * A turn is cancelled by aborting its signal: closing the connection cancels it on the server.
 * An HTTP error before the stream starts (no provider, unknown flow, a busy session) is thrown as
 * an `ApiError` whose message is the server's, with its hint.
 */
import { ApiError, authHeaders, notifyUnauthorized, request } from "../api";
import { SseParser } from "../live";
import type { AssistantConfig, AssistantEvent } from "./types";

export interface TurnBody {
  flow_id: string;
  input_value: string;
  session_id: string;
  provider?: string;
  model_name?: string;
}

const TERMINAL = new Set(["complete", "error", "cancelled"]);

/** The message a stream that closed before its end shows. */
export const STREAM_CLOSED_MESSAGE = "The connection closed before the reply finished. Try again.";

/** An `ApiError` from a failed response: the server's message, plus its hint when it gives one. */
export async function errorFromResponse(res: Response, what: string): Promise<ApiError> {
  let code = "http_error";
  let message = `${what}: HTTP ${res.status}`;
  let details: any = null;
  try {
    const body = await res.json();
    const err = body?.error;
    if (err && typeof err === "object") {
      code = err.code ?? code;
      message = err.message ?? message;
      details = err.details ?? null;
    } else if (typeof body?.detail === "string") {
      message = body.detail;
    } else if (typeof body?.message === "string") {
      message = body.message;
    }
  } catch {
    /* not JSON */
  }
  const hint = details && typeof details === "object" && !Array.isArray(details) ? details.hint : null;
  if (typeof hint === "string" && hint && !message.includes(hint)) message = `${message} — ${hint}`;
  return new ApiError(res.status, code, message, details);
}

/** An SSE payload as an event: the `event` field, or the `event:` line's name when it is missing. */
export function toAssistantEvent(data: any, type: string | null): AssistantEvent | null {
  if (!data || typeof data !== "object") return null;
  const name = typeof data.event === "string" ? data.event : type;
  if (!name) return null;
  const out = { ...data, event: name };
  if (type !== null && out.type === type) delete out.type; // SseParser copied the `event:` line there
  return out as AssistantEvent;
}

/**
 * Stream one turn: every event goes to `onEvent` in order. Resolves when the stream ends or the
 * signal aborts (a stop is not an error); throws `ApiError` on an HTTP error. A stream that closes
 * without `complete`, `error` or `cancelled` ends with a synthetic `error` event.
 */
export async function streamTurn(body: TurnBody, onEvent: (e: AssistantEvent) => void, signal: AbortSignal): Promise<void> {
  let ended = false;
  const parser = new SseParser((data, _id, type) => {
    const ev = toAssistantEvent(data, type);
    if (!ev || ended) return;
    if (TERMINAL.has(ev.event)) ended = true;
    onEvent(ev);
  });
  let res: Response;
  try {
    res = await fetch("/api/v1/assistant/stream", {
      method: "POST",
      headers: { ...authHeaders(), "content-type": "application/json", accept: "text/event-stream" },
      credentials: "same-origin",
      body: JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  }
  if (!res.ok) {
    if (res.status === 401) notifyUnauthorized(); // the session ended: the shell asks to sign in again
    throw await errorFromResponse(res, "POST /api/v1/assistant/stream");
  }
  if (!res.body) {
    onEvent({ event: "error", message: STREAM_CLOSED_MESSAGE });
    return;
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.push(decoder.decode(value, { stream: true }));
      if (ended) break;
    }
    parser.push(decoder.decode() + "\n\n");
  } catch {
    if (signal.aborted) return;
    if (!ended) onEvent({ event: "error", message: STREAM_CLOSED_MESSAGE });
    return;
  } finally {
    if (ended) reader.cancel().catch(() => undefined);
  }
  if (!ended && !signal.aborted) onEvent({ event: "error", message: STREAM_CLOSED_MESSAGE });
}

/** Forget a session on the server (memory, registered components). Errors are swallowed (F11). */
export async function resetSession(id: string): Promise<void> {
  try {
    const res = await fetch(`/api/v1/assistant/sessions/reset?session_id=${encodeURIComponent(id)}`, {
      method: "POST",
      headers: { ...authHeaders() },
      credentials: "same-origin",
    });
    await res.body?.cancel().catch(() => undefined);
  } catch {
    /* the user can always type */
  }
}

/** GET /api/v1/assistant/config: the providers the caller can use. */
export function fetchConfig(): Promise<AssistantConfig> {
  return request<AssistantConfig>("GET", "/api/v1/assistant/config");
}
