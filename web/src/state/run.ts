/**
 * Run events -> what the canvas shows. One reducer for the `/ws` flow channel, the SSE stream and
 * a stored run being replayed, so live and replay look the same.
 */
import type { RunEvent as WireEvent, RunStatus as WireRunStatus } from "../generated/events";
import type { EdgeSpec, RunDetail } from "../types";
import { DEFAULT_IN, DEFAULT_OUT, edgeKey } from "./graph";

export type NodeStatus = "pending" | "running" | "ok" | "error" | "skipped" | "waiting" | "cancelled";
/** A run's status on the canvas: the engine's run statuses, and two of the browser's own. */
export type RunStatus = "idle" | "starting" | WireRunStatus;

export interface ToolCall {
  name: string;
  args: any;
}

/** A node run again because the server stopped while an attempt of it ran (`node_rerun`). */
export interface Rerun {
  attempt: number;
  reason: string;
}

export interface NodeRunState {
  status: NodeStatus;
  preview: string;
  toolCalls: ToolCall[];
  output?: any;
  error?: string;
  attempt?: number;
  durationMs?: number;
  branch?: string[];
  task?: any;
  /** attempts that began again after the server stopped (what the cut-short one did may have happened) */
  reruns?: Rerun[];
}

/** One step of an edge-LLM run: an accepted `decision`, or a `decision_rejected` step (`failed`). */
export interface DecisionEntry {
  step: number;
  mode?: string;
  next?: { node: string; input?: any }[];
  skips?: string[];
  reason?: string;
  at?: string | null;
  rejected?: { reply: string; problems: string[] }[];
  failed?: boolean;
}

export interface RunState {
  runId: string | null;
  status: RunStatus;
  nodes: Record<string, NodeRunState>;
  firedEdges: Record<string, true>;
  lastSeq: number;
  error?: string;
  outputs?: Record<string, any>;
  usage?: Record<string, any>;
  /** The run's own started -> finished time (its first `run_started` to its final `run_finished`,
   * by their timestamps), so a run that waited for a person shows the whole wait, the same number in
   * the editor, the result panel and the run inspector. Unset while the run has not ended. */
  durationMs?: number;
  /** `ts` (Unix seconds) of the run's first `run_started`, and of its final `run_finished` */
  startedTs?: number;
  finishedTs?: number;
  /** provider and model per node, when node events name them (`model: {provider, model}`) */
  models?: Record<string, { provider?: string; model?: string }>;
  /** edge-LLM flows: the decider's steps, in order */
  decisions?: DecisionEntry[];
}

/** Each wire event with every field but `type` optional: the reducer reads what any channel hands
 * it and copes with a field that is missing. */
type Lenient<E> = E extends { type: infer T } ? { type: T } & Partial<Omit<E, "type">> : never;

/** An event as the reducer sees it, whatever channel it came from: one of the wire events (types
 * generated from `plait schema --events`, see `src/generated/events.ts`), with the run and node ids
 * also under the flow channel's camelCase names. */
export type RunEvent = Lenient<WireEvent> & { runId?: string; nodeId?: string };

export const PREVIEW_LIMIT = 4000;

export function idleRun(): RunState {
  return { runId: null, status: "idle", nodes: {}, firedEdges: {}, lastSeq: 0 };
}

export function startingRun(runId: string | null = null): RunState {
  return { ...idleRun(), runId, status: "starting" };
}

/** Accepts `{type, run_id, node_id, ...}` (SSE/event log) and `{type, runId, nodeId, ...}` or
 * `{type, data: {...}}` (flow channel) alike. */
export function normalizeEvent(raw: any): RunEvent | null {
  if (!raw || typeof raw !== "object") return null;
  const body = raw.data && typeof raw.data === "object" && !Array.isArray(raw.data) ? { ...raw.data, ...raw, ...raw.data } : raw;
  const type = body.type ?? body.event;
  if (typeof type !== "string") return null;
  const out: RunEvent = { ...body, type };
  const runId = body.runId ?? body.run_id;
  const nodeId = body.nodeId ?? body.node_id;
  if (runId !== undefined) out.runId = runId;
  if (nodeId !== undefined && nodeId !== null) out.nodeId = String(nodeId);
  if (typeof body.seq === "number") out.seq = body.seq;
  return out;
}

function node(state: RunState, id: string): NodeRunState {
  return state.nodes[id] ?? { status: "pending", preview: "", toolCalls: [] };
}

function withNode(state: RunState, id: string, patch: Partial<NodeRunState>): RunState {
  return { ...state, nodes: { ...state.nodes, [id]: { ...node(state, id), ...patch } } };
}

const TERMINAL = new Set(["completed", "failed", "cancelled"]);

export function reduceRun(state: RunState, e: RunEvent): RunState {
  if (e.seq !== undefined) {
    if (e.seq <= state.lastSeq) return state; // replayed twice (re-attach): exactly once
    state = { ...state, lastSeq: e.seq };
  }
  if (e.runId && !state.runId) state = { ...state, runId: e.runId };
  const id = e.nodeId;
  switch (e.type) {
    case "run_started": {
      const startedTs = state.startedTs ?? (typeof e.ts === "number" ? e.ts : undefined);
      return TERMINAL.has(state.status) ? { ...state, startedTs } : { ...state, status: "running", startedTs };
    }
    case "node_started":
      if (!id) return state;
      return withNode({ ...state, status: state.status === "waiting" ? "running" : state.status === "idle" || state.status === "starting" ? "running" : state.status }, id, {
        status: "running",
        attempt: e.attempt ?? 1,
        error: undefined,
        preview: "",
      });
    case "node_retrying":
      return id ? withNode(state, id, { attempt: e.attempt, error: e.error }) : state;
    case "node_rerun": {
      if (!id) return state;
      const rerun: Rerun = { attempt: Number(e.attempt ?? 0), reason: String(e.reason ?? "") };
      return withNode(state, id, { attempt: rerun.attempt, reruns: [...(node(state, id).reruns ?? []), rerun] });
    }
    case "node_token": {
      if (!id) return state;
      const prev = node(state, id).preview;
      const preview = (prev + String(e.delta ?? "")).slice(-PREVIEW_LIMIT);
      return withNode(state, id, { preview });
    }
    case "node_tool_call":
      if (!id) return state;
      return withNode(state, id, { toolCalls: [...node(state, id).toolCalls, { name: e.name ?? "", args: e.args }] });
    case "node_skipped":
      return id ? withNode(state, id, { status: "skipped" }) : state;
    case "node_finished": {
      if (!id) return state;
      const ok = e.ok !== false;
      const branch = e.branch ?? undefined;
      const model = modelOf(e);
      if (model) state = { ...state, models: { ...(state.models ?? {}), [id]: model } };
      return withNode(state, id, {
        status: ok ? "ok" : "error",
        output: e.output,
        error: ok ? undefined : String(e.error ?? "failed"),
        attempt: e.attempt ?? node(state, id).attempt,
        durationMs: e.duration_ms ?? undefined,
        branch: branch ? ([] as string[]).concat(branch) : undefined,
      });
    }
    case "edge_fired": {
      const key = e.edge ?? (e.from && e.to ? `${e.from}->${e.to}` : undefined);
      if (!key) return state;
      return { ...state, firedEdges: { ...state.firedEdges, [key]: true } };
    }
    case "decision":
    case "decision_rejected": {
      // the wire types `next` and `rejected` as lists of objects; DecisionEntry names their keys
      const next = e.type === "decision" ? (e.next as DecisionEntry["next"]) : undefined;
      const rejected = e.rejected as DecisionEntry["rejected"];
      const entry: DecisionEntry =
        e.type === "decision"
          ? { step: Number(e.step), mode: e.mode, next: next ?? [], skips: e.skips ?? [], reason: e.reason, at: e.at, rejected }
          : { step: Number(e.step), rejected: rejected ?? [], failed: true };
      return { ...state, decisions: [...(state.decisions ?? []), entry] };
    }
    case "waiting":
      return id ? withNode({ ...state, status: "waiting" }, id, { status: "waiting", task: e.task }) : state;
    case "error":
      return { ...state, error: String(e.message ?? "error") };
    case "run_finished": {
      const status: RunStatus = e.status ?? "completed";
      let nodes = state.nodes;
      if (status !== "waiting") {
        nodes = { ...nodes };
        for (const [k, n] of Object.entries(nodes)) {
          if (n.status === "running") nodes[k] = { ...n, status: status === "cancelled" ? "cancelled" : "error" };
        }
      }
      const finishedTs = status === "waiting" || typeof e.ts !== "number" ? undefined : e.ts;
      return { ...state, status, nodes, outputs: e.outputs, usage: e.usage, finishedTs, durationMs: runDuration(state.startedTs, finishedTs, status === "waiting" ? undefined : e.duration_ms), error: e.error ?? state.error };
    }
    default:
      return state;
  }
}

/** The one duration of a run: finished - started (seconds, from the run's events or its stored
 * row), else `fallback` (the engine's own figure, when no timestamps are known). */
export function runDuration(startedTs: number | null | undefined, finishedTs: number | null | undefined, fallback?: number | null): number | undefined {
  if (typeof startedTs === "number" && typeof finishedTs === "number" && finishedTs >= startedTs) return (finishedTs - startedTs) * 1000;
  return typeof fallback === "number" ? fallback : undefined;
}

/** `{provider, model}` of a node event, when it names them (`model: {provider, model}` or
 * `model: "name"` with `provider`). */
export function modelOf(e: any): { provider?: string; model?: string } | undefined {
  const m = e?.model;
  if (m && typeof m === "object") {
    const out = { provider: m.provider ? String(m.provider) : undefined, model: m.model ?? m.name ? String(m.model ?? m.name) : undefined };
    return out.provider || out.model ? out : undefined;
  }
  if (typeof m === "string" && m) return { model: m, provider: typeof e.provider === "string" ? e.provider : undefined };
  return undefined;
}

export function reduceAll(state: RunState, events: any[]): RunState {
  for (const raw of events) {
    const e = normalizeEvent(raw);
    if (e) state = reduceRun(state, e);
  }
  return state;
}

/** The state of a stored run (GET /runs/{id}), for the inspector's replay. */
export function runStateFromDetail(d: RunDetail, edgeKeysFired: string[] = []): RunState {
  const nodes: Record<string, NodeRunState> = {};
  for (const [id, n] of Object.entries(d.nodes ?? {})) {
    nodes[id] = {
      status: (n.status as NodeStatus) ?? "pending",
      preview: "",
      toolCalls: [],
      output: n.output,
      error: n.error,
      attempt: n.attempts,
      durationMs: n.duration_ms,
      branch: n.ports,
    };
  }
  const fired: Record<string, true> = {};
  for (const k of edgeKeysFired) fired[k] = true;
  return {
    runId: d.id,
    status: d.status as RunStatus,
    nodes,
    firedEdges: fired,
    lastSeq: d.last_seq ?? 0,
    error: d.error ?? undefined,
    outputs: d.outputs ?? undefined,
    usage: d.usage ?? undefined,
    startedTs: d.started_at ?? undefined,
    finishedTs: d.finished_at ?? undefined,
    durationMs: d.status === "waiting" ? undefined : runDuration(d.started_at, d.finished_at, (d as any).duration_ms),
  };
}

export function isActive(s: RunState): boolean {
  return s.status === "starting" || s.status === "queued" || s.status === "running" || s.status === "waiting";
}

/** Sum of the token counts in a usage record (`total_tokens`, else input + output). */
export function tokensOf(usage: Record<string, any> | number | null | undefined): number {
  if (typeof usage === "number") return usage;
  if (!usage || typeof usage !== "object") return 0;
  if (typeof usage.total_tokens === "number") return usage.total_tokens;
  const i = Number(usage.input_tokens ?? usage.prompt_tokens ?? 0);
  const o = Number(usage.output_tokens ?? usage.completion_tokens ?? 0);
  if (i || o) return i + o;
  // per-model or per-provider nesting
  let total = 0;
  for (const v of Object.values(usage)) if (v && typeof v === "object") total += tokensOf(v as any);
  return total;
}

/** What a node has received in this run: per target port, the value its fired incoming edges
 * delivered (a source's whole output, or its `port` key when the output is an object that has one,
 * as the engine's `port_value`), or `{source: value}` when several sources deliver to one port.
 * Known as soon as the node's sources finish, so a running node shows its input too. */
export function liveInputs(edges: EdgeSpec[], run: RunState, nodeId: string): Record<string, any> | undefined {
  const ports: Record<string, Record<string, any>> = {};
  for (const e of edges) {
    if (e.target !== nodeId || !run.firedEdges[edgeKey(e)]) continue;
    const source = run.nodes[e.source];
    if (!source || source.status !== "ok") continue;
    const port = e.source_port ?? DEFAULT_OUT;
    const out = source.output;
    const isObject = out !== null && typeof out === "object" && !Array.isArray(out);
    const value = port === DEFAULT_OUT || !isObject || !(port in out) ? out : out[port];
    (ports[e.target_port ?? DEFAULT_IN] ??= {})[e.source] = value;
  }
  const names = Object.keys(ports);
  if (!names.length) return undefined;
  return Object.fromEntries(
    names.map((name) => {
      const bySource = ports[name];
      const sources = Object.keys(bySource);
      return [name, sources.length === 1 ? bySource[sources[0]] : bySource];
    }),
  );
}
