/* eslint-disable */
// GENERATED FILE, do not edit. Made by `make events`
// (`plait schema --events | node web/scripts/gen-events.mjs`) from the event dataclasses in
// src/plait/engine/events.py. `make events-check` (part of `make lint`) fails when it is stale.

/**
 * One run event as the SSE stream, the /ws flow channel and Event.to_dict() give it: the envelope, then the payload's fields. The envelope: `seq`, the event's number in its run's log (1, 2, ...; the SSE id); `type`, which tells the payload apart; `run_id`; `ts`, when it was emitted (Unix time, seconds); `node_id`, the node it is about (`owner/child` inside loop and map bodies), left out for run-level events.
 */
export type RunEvent =
  | RunStarted
  | NodeStarted
  | NodeToken
  | NodeToolCall
  | NodeRetrying
  | NodeRerun
  | NodeFinished
  | NodeSkipped
  | EdgeFired
  | Decision
  | DecisionRejected
  | Waiting
  | RunFinished
  | RunError;
export type RunStatus = "queued" | "running" | "waiting" | "completed" | "failed" | "cancelled";

export interface RunStarted {
  seq: number;
  type: "run_started";
  run_id: string;
  ts: number;
  node_id?: string;
  flow_id: string;
  inputs: {
    [k: string]: unknown;
  };
  retry_of?: string;
  from_node?: string;
}
export interface NodeStarted {
  seq: number;
  type: "node_started";
  run_id: string;
  ts: number;
  node_id?: string;
  node_type: string;
  attempt: number;
}
export interface NodeToken {
  seq: number;
  type: "node_token";
  run_id: string;
  ts: number;
  node_id?: string;
  delta: string;
}
export interface NodeToolCall {
  seq: number;
  type: "node_tool_call";
  run_id: string;
  ts: number;
  node_id?: string;
  name: string;
  args: unknown;
}
export interface NodeRetrying {
  seq: number;
  type: "node_retrying";
  run_id: string;
  ts: number;
  node_id?: string;
  attempt: number;
  error: string;
  delay_s: number;
}
/**
 * A node runs again because its last attempt never ended: the server stopped while it ran (a crash, or a restart). `attempt` is the new attempt; `reason` says why, for people. What the cut-short attempt did outside plait (an HTTP call, a model call) may have happened.
 */
export interface NodeRerun {
  seq: number;
  type: "node_rerun";
  run_id: string;
  ts: number;
  node_id?: string;
  attempt: number;
  reason: string;
}
/**
 * A node ended an attempt: `ok` with its `output` (and the fired `branch` ports), or an `error`.
 */
export interface NodeFinished {
  seq: number;
  type: "node_finished";
  run_id: string;
  ts: number;
  node_id?: string;
  ok: boolean;
  /**
   * The node's output; present only when `ok` is true.
   */
  output?: unknown;
  /**
   * Why the attempt failed; present only when `ok` is false.
   */
  error?: string;
  duration_ms: number | null;
  attempt: number;
  branch?: string[];
  usage?: {
    [k: string]: number;
  };
  model?: {
    [k: string]: string;
  };
}
export interface NodeSkipped {
  seq: number;
  type: "node_skipped";
  run_id: string;
  ts: number;
  node_id?: string;
  reason?: string;
}
export interface EdgeFired {
  seq: number;
  type: "edge_fired";
  run_id: string;
  ts: number;
  node_id?: string;
  edge: string;
  from: string;
  to: string;
}
/**
 * One accepted edge-LLM decision (the DecisionLog record, see `plait.engine.policy_edge`).
 */
export interface Decision {
  seq: number;
  type: "decision";
  run_id: string;
  ts: number;
  node_id?: string;
  step: number;
  mode: string;
  next: {
    [k: string]: unknown;
  }[];
  skips: string[];
  reason: string;
  at: string | null;
  ready?: string[];
  usage?: {
    [k: string]: number;
  };
  rejected?: {
    [k: string]: unknown;
  }[];
}
export interface DecisionRejected {
  seq: number;
  type: "decision_rejected";
  run_id: string;
  ts: number;
  node_id?: string;
  step: number;
  rejected: {
    [k: string]: unknown;
  }[];
  usage?: {
    [k: string]: number;
  };
}
/**
 * A node asks to pause: `task` is the pending interrupt (id, node_id, kind, payload, ...).
 */
export interface Waiting {
  seq: number;
  type: "waiting";
  run_id: string;
  ts: number;
  node_id?: string;
  node: string;
  task: {
    [k: string]: unknown;
  };
}
export interface RunFinished {
  seq: number;
  type: "run_finished";
  run_id: string;
  ts: number;
  node_id?: string;
  status: RunStatus;
  outputs: {
    [k: string]: unknown;
  };
  usage: {
    [k: string]: number;
  };
  duration_ms?: number;
  error?: string;
  interrupts?: {
    [k: string]: unknown;
  }[];
}
export interface RunError {
  seq: number;
  type: "error";
  run_id: string;
  ts: number;
  node_id?: string;
  message: string;
}
