/**
 * The assistant panel's shapes: the server's stream events (docs/assistant.md, "Talk to it"), the
 * chat the panel keeps, and the one narrow port it uses to touch the canvas (`CanvasBridge`).
 *
 * The panel never reaches into the editor's state: everything it does to the canvas goes through
 * the bridge, so a canvas change from the assistant is an ordinary edit (one undo step, the same
 * validation and autosave as a manual one).
 */
import type { EdgeSpec, FlowDocument, NodeSpec, NodeType, Position } from "../types";

// ------------------------------------------------------------------ server events (SSE `data:`)

export type ProgressStep =
  | "classifying"
  | "generating_component"
  | "generating"
  | "extracting_code"
  | "validating"
  | "validated"
  | "validation_failed"
  | "retrying"
  | "generation_complete"
  | "orchestrating"
  | "generating_flow"
  | "flow_proposal_ready"
  | "searching_components"
  | "building_flow"
  | "flow_built"
  | "flow_build_failed"
  | "generating_document";

export interface ProgressEvent {
  event: "progress";
  step: ProgressStep;
  attempt: number;
  max_attempts: number;
  message?: string;
  error?: string;
  class_name?: string;
  component_code?: string;
}

export interface TokenEvent {
  event: "token";
  chunk: string;
}

/** `flow_update`: `action` plus that action's fields (spec B32). */
export type FlowUpdate =
  | { event?: "flow_update"; action: "add_component"; node: NodeSpec }
  | { event?: "flow_update"; action: "remove_component"; component_id: string }
  | { event?: "flow_update"; action: "connect"; edge: EdgeSpec }
  | { event?: "flow_update"; action: "configure"; component_id: string; params: Record<string, unknown> }
  | { event?: "flow_update"; action: "set_flow"; flow: FlowDocument; auto_apply?: boolean }
  | {
      event?: "flow_update";
      action: "edit_field";
      id: string;
      component_id: string;
      component_type: string;
      field: string;
      old_value: unknown;
      new_value: unknown;
      description?: string;
      patch: JsonPatchOp[];
    }
  | { event?: "flow_update"; action: "select_output"; component_id: string; output_name: string }
  | { event?: "flow_update"; action: "set_connection_mode"; component_id: string; enabled: boolean }
  | { event?: "flow_update"; action: "propose_plan"; markdown: string };

export interface JsonPatchOp {
  op: "add" | "replace" | "remove";
  /** Against the working flow: "/nodes/<index>/config/<field>". Apply edits by component_id + field, not by index. */
  path: string;
  value?: unknown;
}

export interface FlowPreviewEvent {
  event: "flow_preview";
  flow: FlowDocument;
  name: string;
  node_count: number;
  edge_count: number;
  graph: string;
}

export interface FileWrittenEvent {
  event: "file_written";
  action: "write_file" | "edit_file";
  path: string;
  size: number;
  content?: string;
}

/** The flow builder started a real run of this flow: the canvas follows it live. */
export interface RunStartedEvent {
  event: "run_started";
  run_id: string;
  flow_id: string;
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

export interface RunMetrics extends Usage {
  duration_seconds: number;
}

export interface CompleteData {
  result: string;
  validated: boolean;
  class_name: string | null;
  component_code: string | null;
  validation_attempts: number;
  intent: string;
  provider: string;
  model: string | null;
  usage: Usage;
  duration_seconds: number;
  continuation_expected?: boolean;
  run_metrics?: RunMetrics;
  restore_version_id?: number | null;
  error?: string;
  [k: string]: unknown;
}

export interface CompleteEvent {
  event: "complete";
  data: CompleteData;
}

export interface ErrorEvent {
  event: "error";
  message: string;
}

export interface CancelledEvent {
  event: "cancelled";
  message?: string;
}

export type AssistantEvent =
  | ProgressEvent
  | TokenEvent
  | (FlowUpdate & { event: "flow_update" })
  | FlowPreviewEvent
  | FileWrittenEvent
  | RunStartedEvent
  | CompleteEvent
  | ErrorEvent
  | CancelledEvent;

/** GET /api/v1/assistant/config */
export interface AssistantConfig {
  configured: boolean;
  configured_providers: string[];
  providers: { name: string; configured: boolean; default_model: string | null; models: { name: string; display_name: string }[] }[];
  default_provider: string | null;
  default_model: string | null;
}

export interface ModelChoice {
  provider: string;
  model: string;
}

// ------------------------------------------------------------------ the chat the panel keeps

export type MessageStatus = "streaming" | "complete" | "error" | "cancelled";

/** A row of the build-task checklist (F37). */
export interface BuildTask {
  action: "add_component" | "remove_component" | "connect" | "configure";
  componentId: string;
  sourceId?: string;
  targetId?: string;
  label: string; // "Added start", "Wired start → out", "Configured out", "Removed llm"
}

export type ProposalStatus = "pending" | "applied" | "dismissed";

/** A `set_flow` waiting for the user (F23-F28). `tail` holds later live updates, replayed in order after it. */
export interface FlowProposal {
  flow: FlowDocument;
  name: string;
  nodeCount: number;
  edgeCount: number;
  status: ProposalStatus;
  tail: FlowUpdate[];
}

export type EditStatus = "pending" | "applied" | "dismissed";

export interface FieldEdit {
  update: Extract<FlowUpdate, { action: "edit_field" }>;
  status: EditStatus;
}

export type PlanStatus = "pending" | "approved" | "refining" | "dismissed";

export interface PlanCard {
  markdown: string;
  status: PlanStatus;
}

export interface FileCard {
  action: "write_file" | "edit_file";
  path: string;
  size: number;
  content?: string;
}

export interface ChatMessage {
  id: string;
  role: "user" | "assistant";
  /** What the user typed, or the assistant's streamed markdown. */
  text: string;
  status: MessageStatus;
  /** Assistant only: the latest progress event of the turn (dropped when the turn ends or is stored). */
  progress?: ProgressEvent | null;
  /** Assistant only: every progress step seen, in order (F17 uses them). */
  steps?: ProgressStep[];
  complete?: CompleteData;
  error?: string;
  tasks?: BuildTask[];
  proposal?: FlowProposal;
  edits?: FieldEdit[];
  plan?: PlanCard;
  files?: FileCard[];
  runIds?: string[];
  /** Hidden assistant slots (skip-all's first turn) and silent user turns are not rendered. */
  hidden?: boolean;
  createdAt: number;
}

export interface StoredSession {
  id: string; // agentic_<uuid>
  title: string;
  updatedAt: number;
  messages: ChatMessage[];
}

// ------------------------------------------------------------------ the canvas port

/**
 * What the panel may do to the canvas. Implemented by the editor (pages/Editor.tsx); a fake in tests.
 * Every document change is one undoable edit that goes through the editor's usual validation and
 * autosave.
 */
export interface CanvasBridge {
  flowId: string;
  /** Viewers cannot change the flow: the panel answers questions but applies nothing. */
  readOnly: boolean;
  /** The top-level draft as it is on the canvas now. */
  document(): FlowDocument;
  /** Replace the draft with `next` as one undo step; `fit` frames the whole flow afterwards (Replace). */
  commit(next: FlowDocument, opts?: { fit?: boolean }): void;
  /** Save the draft to the server now (before a continuation turn reads it). */
  flush(): Promise<void>;
  /** The centre of the visible canvas, in flow coordinates (Add to canvas of a component). */
  center(): Position;
  /** Measured node sizes, for placing merged flows without overlap. */
  sizes(): Record<string, { width: number; height: number }>;
  /** Select nodes on the canvas (the @-mention preview); [] clears. */
  select(ids: string[]): void;
  /** Show a run live on the canvas, as any run of the flow. */
  watchRun(runId: string): void;
  /** Lock the canvas while the assistant works (F5). */
  setLocked(locked: boolean): void;
  /** The node types (built-in and the user's components), for mentions and Add to canvas. */
  nodeTypes(): NodeType[];
  /** Reload the node types (after the assistant registered a component). */
  refreshTypes(): Promise<void>;
  /** A short notification in the editor's notice bar. */
  notify(text: string): void;
}
