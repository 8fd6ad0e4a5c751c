/**
 * Live run telemetry: the `/ws` flow channel (client `run`/`stop`; server node_started, node_token,
 * edge_fired, ... run_finished) with the SSE event stream as the fallback. Both deliver raw event
 * objects to the same reducer (state/run.ts).
 */
import { api, ApiError, authHeaders, getApiKey } from "./api";

export type EventHandler = (raw: any) => void;

/** Parse an SSE byte stream into `data:` JSON payloads (`id:`/`event:` lines, comments ignored). */
export class SseParser {
  private buffer = "";
  constructor(private readonly onEvent: (data: any, id: string | null, type: string | null) => void) {}

  push(chunk: string): void {
    this.buffer += chunk.replace(/\r\n/g, "\n");
    let idx: number;
    while ((idx = this.buffer.indexOf("\n\n")) >= 0) {
      const block = this.buffer.slice(0, idx);
      this.buffer = this.buffer.slice(idx + 2);
      let data = "";
      let id: string | null = null;
      let type: string | null = null;
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data += (data ? "\n" : "") + val;
        else if (field === "id") id = val;
        else if (field === "event") type = val;
      }
      if (!data) continue;
      try {
        const parsed = JSON.parse(data);
        if (type && parsed && typeof parsed === "object" && !parsed.type) parsed.type = type;
        this.onEvent(parsed, id, type);
      } catch {
        /* not JSON: ignore */
      }
    }
  }
}

/**
 * Follow a run's events over SSE (fetch, so the session cookie or the API key header goes along), re-attaching with
 * `Last-Event-ID` when the connection drops, until `run_finished` of a terminal run or `abort`.
 */
export function followRunSse(runId: string, onEvent: EventHandler, signal: AbortSignal, after = 0): Promise<void> {
  let last = after;
  let done = false;
  const handle = (data: any, id: string | null) => {
    if (id) last = Math.max(last, Number(id) || 0);
    onEvent(data);
    if (data?.type === "run_finished" && data?.status !== "waiting") done = true;
  };
  const once = async () => {
    const res = await fetch(`/api/v1/runs/${encodeURIComponent(runId)}/events?after=${last}`, {
      headers: { ...authHeaders(), accept: "text/event-stream" },
      credentials: "same-origin",
      signal,
    });
    if (!res.ok || !res.body) throw new Error(`event stream: HTTP ${res.status}`);
    const parser = new SseParser(handle);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      parser.push(value);
    }
  };
  return (async () => {
    let failures = 0;
    while (!done && !signal.aborted) {
      try {
        await once();
        failures = 0;
        // a waiting run's stream stays open; a closed stream after run_finished means done
        if (!done) await sleep(500, signal);
      } catch (err) {
        if (signal.aborted) return;
        if (++failures > 20) throw err;
        await sleep(Math.min(5000, 250 * 2 ** failures), signal);
      }
    }
  })();
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/**
 * The `/ws` flow channel (protocol: src/plait/service/channel.py). Client messages:
 * `{type: "run", flow_id, version?, inputs?, id?}`, `{type: "stop", run_id}`,
 * `{type: "subscribe", run_id, after?}`, `{type: "unsubscribe", run_id}`. The browser's session
 * cookie goes with the handshake; an API key used instead rides in the URL (`?api_key=`). Server messages: replies (`run_accepted`, `subscribed`, `stopped`, ...), protocol
 * errors (`{type: "error", code, message, id?}` without `seq`) and run events with `run_id`/`seq`.
 */
export class FlowChannel {
  private ws: WebSocket | null = null;
  private opening: Promise<boolean> | null = null;
  private runs = new Map<string, EventHandler>();
  private pending = new Map<string, { resolve: (m: any) => void; reject: (e: any) => void; onEvent?: EventHandler }>();
  private nextId = 1;
  private lastSeq = new Map<string, number>();
  /** Called for each watched run when the socket closes (the caller re-attaches elsewhere). */
  onDrop: ((runId: string, lastSeq: number, onEvent: EventHandler) => void) | null = null;

  connect(timeoutMs = 2500): Promise<boolean> {
    if (this.ws?.readyState === WebSocket.OPEN) return Promise.resolve(true);
    if (this.opening) return this.opening;
    if (typeof WebSocket === "undefined") return Promise.resolve(false);
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const key = getApiKey();
    const url = `${proto}//${location.host}/ws${key ? `?api_key=${encodeURIComponent(key)}` : ""}`;
    this.opening = new Promise<boolean>((resolve) => {
      let settled = false;
      let ws: WebSocket;
      try {
        ws = new WebSocket(url);
      } catch {
        resolve(false);
        return;
      }
      const finish = (ok: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.opening = null;
        resolve(ok);
      };
      const timer = setTimeout(() => {
        finish(false);
        ws.close();
      }, timeoutMs);
      ws.onopen = () => {
        this.ws = ws;
        finish(true);
      };
      ws.onerror = () => finish(false);
      ws.onclose = () => {
        if (this.ws === ws) this.ws = null;
        finish(false);
        const err = new Error("the flow channel closed");
        this.pending.forEach((p) => p.reject(err));
        this.pending.clear();
        // runs still being watched continue over SSE from the last event seen
        const orphans = [...this.runs.entries()];
        this.runs.clear();
        for (const [runId, h] of orphans) this.onDrop?.(runId, this.lastSeq.get(runId) ?? 0, h);
      };
      ws.onmessage = (m) => {
        let data: any;
        try {
          data = JSON.parse(typeof m.data === "string" ? m.data : "");
        } catch {
          return;
        }
        this.dispatch(data);
      };
    });
    return this.opening;
  }

  private dispatch(msg: any): void {
    if (!msg || typeof msg !== "object") return;
    const reqId = msg.id !== undefined ? String(msg.id) : null;
    const waiter = reqId ? this.pending.get(reqId) : undefined;
    if (waiter && typeof msg.seq !== "number") {
      this.pending.delete(reqId!);
      if (msg.type === "error") {
        waiter.reject(new ApiError(msg.code === "not_found" ? 404 : msg.code === "unauthorized" ? 401 : 422, msg.code, msg.message, msg.details));
      } else {
        // register before resolving: the run's events follow in the next frames
        if (msg.type === "run_accepted" && waiter.onEvent) this.runs.set(msg.run_id, waiter.onEvent);
        waiter.resolve(msg);
      }
      return;
    }
    const runId = msg.run_id;
    if (typeof runId === "string") {
      const h = this.runs.get(runId);
      if (typeof msg.seq === "number") this.lastSeq.set(runId, Math.max(this.lastSeq.get(runId) ?? 0, msg.seq));
      if (h && (typeof msg.seq === "number" || msg.type !== "error" || !msg.code)) h(msg);
      else if (h && msg.code === "stream_failed") h({ type: "stream_failed", run_id: runId, message: msg.message });
      if (msg.type === "run_finished" && msg.status !== "waiting") this.runs.delete(runId);
    }
  }

  private request(msg: Record<string, any>, onEvent?: EventHandler): Promise<any> {
    const id = String(this.nextId++);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onEvent });
      if (!this.connected) {
        this.pending.delete(id);
        reject(new Error("the flow channel is not connected"));
        return;
      }
      this.ws!.send(JSON.stringify({ ...msg, id }));
    });
  }

  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Start a run; its events go to `onEvent`. Resolves with the run id. */
  async run(flowId: string, inputs: Record<string, any>, version: string, onEvent: EventHandler): Promise<string> {
    const reply = await this.request({ type: "run", flow_id: flowId, inputs, version }, onEvent);
    return reply.run_id;
  }

  async subscribe(runId: string, after: number, onEvent: EventHandler): Promise<void> {
    this.runs.set(runId, onEvent);
    try {
      await this.request({ type: "subscribe", run_id: runId, after });
    } catch (e) {
      this.runs.delete(runId);
      throw e;
    }
  }

  unsubscribe(runId: string): void {
    if (this.runs.delete(runId) && this.connected) this.ws!.send(JSON.stringify({ type: "unsubscribe", run_id: runId }));
  }

  async stop(runId: string): Promise<void> {
    await this.request({ type: "stop", run_id: runId });
  }

  close(): void {
    this.ws?.close();
    this.ws = null;
  }
}

/** `localStorage["plait.transport"] = "sse"` forces the SSE fallback (for tests and proxies
 * that do not pass WebSockets). */
function closeWs(ch: FlowChannel, runId: string): void {
  ch.unsubscribe(runId);
  fallbacks.get(runId)?.abort();
  fallbacks.delete(runId);
}

function wsAllowed(): boolean {
  try {
    return localStorage.getItem("plait.transport") !== "sse";
  } catch {
    return true;
  }
}

let shared: FlowChannel | null = null;
const fallbacks = new Map<string, AbortController>();
function channel(): FlowChannel {
  if (!shared) {
    shared = new FlowChannel();
    shared.onDrop = (runId, after, onEvent) => {
      // the run's Watch.close() aborts this too; the reducer ignores events it has seen
      const abort = new AbortController();
      fallbacks.set(runId, abort);
      followRunSse(runId, onEvent, abort.signal, after)
        .catch(() => undefined)
        .finally(() => fallbacks.get(runId) === abort && fallbacks.delete(runId));
    };
  }
  return shared;
}

/** A run being watched; `close()` stops watching (not the run). */
export interface Watch {
  runId: string;
  via: "ws" | "sse";
  close(): void;
}

/** Start a run of the flow and watch it: over `/ws` when the server has it, else REST + SSE. */
export async function startAndWatch(flowId: string, inputs: Record<string, any>, version: string, onEvent: EventHandler): Promise<Watch> {
  const ch = channel();
  if (wsAllowed() && (await ch.connect())) {
    const runId = await ch.run(flowId, inputs, version, onEvent);
    return { runId, via: "ws", close: () => closeWs(ch, runId) };
  }
  const { id } = await api.startRun(flowId, inputs, version);
  return watchRun(id, onEvent, 0, false);
}

/** Watch an existing run from event `after` on (0: replay all, then live). */
export async function watchRun(runId: string, onEvent: EventHandler, after = 0, tryWs = true): Promise<Watch> {
  const ch = channel();
  if (tryWs && wsAllowed() && (await ch.connect())) {
    try {
      await ch.subscribe(runId, after, onEvent);
      return { runId, via: "ws", close: () => closeWs(ch, runId) };
    } catch {
      /* fall back to SSE */
    }
  }
  const abort = new AbortController();
  followRunSse(runId, onEvent, abort.signal, after).catch((e) => onEvent({ type: "stream_failed", run_id: runId, message: String(e?.message ?? e) }));
  return { runId, via: "sse", close: () => abort.abort() };
}

/** Stop (cancel) a run: `stop` on the channel when connected, else POST /runs/{id}/cancel. */
export async function stopRun(runId: string): Promise<void> {
  const ch = channel();
  if (ch.connected) {
    try {
      await ch.stop(runId);
      return;
    } catch (e) {
      if (e instanceof ApiError && e.code === "conflict") return;
    }
  }
  try {
    await api.cancelRun(runId);
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 409)) throw e;
  }
}
