/** Shapes of the plait/flow@1 document and of the HTTP API (docs/api.md). */

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonSchema = { [k: string]: any };

export interface Position {
  x: number;
  y: number;
}

export interface NodeSpec {
  id: string;
  type: string;
  label?: string;
  description?: string;
  config?: Record<string, any>;
  position?: Position;
  [k: string]: any;
}

export interface EdgeSpec {
  id?: string;
  source: string;
  source_port?: string;
  target: string;
  target_port?: string;
}

export interface FlowDocument {
  schema?: string;
  id?: string;
  name?: string;
  description?: string;
  inputs?: JsonSchema;
  nodes: NodeSpec[];
  edges: EdgeSpec[];
  [k: string]: any;
}

export interface NodeType {
  name: string;
  title: string;
  description: string;
  category: string;
  config_schema: JsonSchema;
  input_ports: string[];
  output_ports: string[] | "dynamic";
}

/** GET /api/v1/tools: what agents and `tool` nodes can name (`ref`). */
export interface ToolInfo {
  name: string;
  ref: string;
  description: string;
  source: string;
}

export interface ToolsListing {
  tools: ToolInfo[];
  mcp_servers: { name: string; ref: string; transport: string; tools: ToolInfo[]; error?: string | null }[];
  mcp_config_error?: string | null;
}

export interface Problem {
  code?: string;
  message: string;
  node_id?: string | null;
  field?: string | null;
  hint?: string | null;
}

export interface FlowSummary {
  id: string;
  name: string;
  description: string;
  latest_version: number;
  created_at: number;
  updated_at: number;
  /** Who owns it and what the caller may do (servers with users; absent before). */
  owner_id?: string;
  access?: FlowAccess;
}

export interface FlowOut extends FlowSummary {
  draft: FlowDocument;
  problems: Problem[];
}

export interface VersionOut {
  flow_id: string;
  version: number;
  note: string;
  created_at: number;
  document?: FlowDocument | null;
}

export interface Usage {
  [k: string]: any;
}

export interface RunSummary {
  id: string;
  flow_id: string;
  version: number | null;
  status: string;
  outputs: Record<string, any> | null;
  error: string | null;
  usage: Usage | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  cancel_requested: boolean;
  /** The schedule or webhook trigger that started the run (null: a direct call). */
  trigger_id?: string | null;
  [k: string]: any;
}

export interface NodeRunInfo {
  id: string;
  status: string;
  output?: any;
  error?: string;
  attempts?: number;
  started_at?: number;
  duration_ms?: number;
  usage?: Usage;
  ports?: string[];
  inputs?: any;
  input?: any;
  reused?: boolean;
}

export interface RunDetail extends RunSummary {
  inputs: Record<string, any>;
  vars: Record<string, any>;
  nodes: Record<string, NodeRunInfo>;
  tasks: HumanTask[];
  last_seq: number;
}

export interface HumanField {
  name: string;
  label?: string | null;
  type?: "string" | "text" | "number" | "integer" | "boolean" | "select";
  required?: boolean;
  options?: string[];
}

export interface HumanTask {
  token: string;
  run_id: string;
  node_id: string;
  kind: string;
  status: string;
  message: string;
  fields: HumanField[];
  prefill: Record<string, any>;
  actions: string[];
  expires_at: number | null;
  result: Record<string, any> | null;
  [k: string]: any;
}

// ---------------------------------------------------------------- users, keys, sharing

export type Role = "admin" | "editor" | "viewer";
export type Scope = "read" | "write" | "run" | "admin";
/** What the caller may do with a flow (`access` on the flow JSON). */
export type FlowAccess = "owner" | "editor" | "viewer" | "admin";

export interface User {
  id: string;
  email: string;
  name: string;
  role: Role;
  disabled: boolean;
  created_at: number;
}

/** GET /api/v1/me: the signed-in user, how it signed in and what its credential may do. */
export interface Me extends User {
  scopes?: Scope[];
  /** How this request was authenticated: "deployment" is the PLAIT_API_KEY (the local admin). */
  auth?: "session" | "key" | "deployment";
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  created_at: number;
  last_used_at: number | null;
}

/** The answer to creating a key: the only time the secret is shown. */
export interface NewApiKey extends ApiKey {
  key: string;
}

export interface Share {
  user_id: string;
  email: string;
  name: string;
  role: "viewer" | "editor";
}

/** A schedule or webhook that starts runs of a flow (`/api/v1/flows/{id}/triggers`). */
export interface Trigger {
  id: string;
  flow_id: string;
  kind: "schedule" | "webhook";
  config: Record<string, any>;
  enabled: boolean;
  last_fired_at?: number | null;
  next_fire_at?: number | null;
  created_at: number;
  updated_at: number;
  /** A webhook's delivery path. */
  url?: string | null;
  /** A webhook's secret: in the creation's answer only. */
  secret?: string | null;
}
