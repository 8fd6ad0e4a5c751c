/**
 * Canvas state as pure functions over the plait/flow@1 document. The document is the source of
 * truth (what autosave PUTs); the canvas engine only renders it, so every edit here is testable
 * without a browser and undo/redo is a stack of documents.
 */
import type { EdgeSpec, FlowDocument, NodeSpec, NodeType, Position } from "../types";

export const DEFAULT_OUT = "out";
export const DEFAULT_IN = "in";
const RESERVED = new Set(["inputs", "vars", "sys", "env", "item", "index", "result", "loop"]);
const HISTORY_LIMIT = 100;

/** The edge's identity; the engine's `edge_fired` events carry the same label. */
export function edgeKey(e: EdgeSpec): string {
  return e.id ?? `${e.source}:${e.source_port ?? DEFAULT_OUT}->${e.target}:${e.target_port ?? DEFAULT_IN}`;
}

export function emptyDocument(id: string, name: string): FlowDocument {
  return { schema: "plait/flow@1", id, name, nodes: [], edges: [] };
}

/** Input and output ports of a node; branching nodes derive theirs from their config. */
export function portsOf(node: NodeSpec, type: NodeType | undefined): { inputs: string[]; outputs: string[] } {
  const config = node.config ?? {};
  const inputs = type ? type.input_ports : [DEFAULT_IN];
  if (node.type === "switch") {
    const cases: any[] = Array.isArray(config.cases) ? config.cases : [];
    return { inputs, outputs: [...cases.map((c, i) => c?.name || `case_${i + 1}`), "else"] };
  }
  if (node.type === "human") {
    const actions: any[] = Array.isArray(config.actions) && config.actions.length ? config.actions : ["submit"];
    return { inputs, outputs: actions.map(String) };
  }
  if (!type) return { inputs, outputs: [DEFAULT_OUT] };
  return { inputs, outputs: type.output_ports === "dynamic" ? [DEFAULT_OUT] : type.output_ports };
}

/** A fresh node id like `message_2`: valid (no spaces, braces, @ or dots), not reserved, unused. */
export function uniqueId(base: string, taken: Set<string>): string {
  let stem = base.replace(/[\s{}@.]+/g, "_") || "node";
  if (RESERVED.has(stem)) stem = `${stem}_node`;
  if (!taken.has(stem)) return stem;
  for (let i = 2; ; i++) {
    const id = `${stem}_${i}`;
    if (!taken.has(id)) return id;
  }
}

function ids(doc: FlowDocument): Set<string> {
  return new Set(doc.nodes.map((n) => n.id));
}

/** Default config from the type's JSON Schema (`default`s of its properties). */
export function defaultConfig(type: NodeType | undefined): Record<string, any> {
  const out: Record<string, any> = {};
  const props = type?.config_schema?.properties ?? {};
  for (const [k, p] of Object.entries<any>(props)) {
    if (p && p.default !== undefined && p.default !== null) out[k] = structuredClone(p.default);
  }
  return out;
}

export function addNode(
  doc: FlowDocument,
  typeName: string,
  position: Position,
  type?: NodeType,
  config?: Record<string, any>,
): { doc: FlowDocument; id: string } {
  const id = uniqueId(typeName === "start" ? "start" : typeName, ids(doc));
  const node: NodeSpec = {
    id,
    type: typeName,
    config: config ?? defaultConfig(type),
    position: { x: Math.round(position.x), y: Math.round(position.y) },
  };
  return { doc: { ...doc, nodes: [...doc.nodes, node] }, id };
}

export function moveNodes(doc: FlowDocument, positions: Record<string, Position>): FlowDocument {
  let changed = false;
  const nodes = doc.nodes.map((n) => {
    const p = positions[n.id];
    if (!p) return n;
    const next = { x: Math.round(p.x), y: Math.round(p.y) };
    if (n.position && n.position.x === next.x && n.position.y === next.y) return n;
    changed = true;
    return { ...n, position: next };
  });
  return changed ? { ...doc, nodes } : doc;
}

export interface Connection {
  source: string;
  sourcePort?: string | null;
  target: string;
  targetPort?: string | null;
}

/** Why a connection is refused, or null when it is fine. */
export function connectionProblem(doc: FlowDocument, c: Connection): string | null {
  if (c.source === c.target) return "a node cannot feed itself";
  const known = ids(doc);
  if (!known.has(c.source) || !known.has(c.target)) return "unknown node";
  const e: EdgeSpec = { source: c.source, source_port: c.sourcePort ?? DEFAULT_OUT, target: c.target, target_port: c.targetPort ?? DEFAULT_IN };
  if (doc.edges.some((x) => edgeKey(x) === edgeKey(e))) return "already connected";
  if (reaches(doc, c.target, c.source)) return "that would make a cycle (use a loop node)";
  return null;
}

function reaches(doc: FlowDocument, from: string, to: string): boolean {
  const out = new Map<string, string[]>();
  for (const e of doc.edges) {
    const list = out.get(e.source);
    if (list) list.push(e.target);
    else out.set(e.source, [e.target]);
  }
  const seen = new Set<string>([from]);
  const stack = [from];
  while (stack.length) {
    const n = stack.pop()!;
    if (n === to) return true;
    for (const t of out.get(n) ?? []) {
      if (!seen.has(t)) {
        seen.add(t);
        stack.push(t);
      }
    }
  }
  return false;
}

export function connect(doc: FlowDocument, c: Connection): FlowDocument {
  if (connectionProblem(doc, c)) return doc;
  const edge: EdgeSpec = { source: c.source, target: c.target };
  if (c.sourcePort && c.sourcePort !== DEFAULT_OUT) edge.source_port = c.sourcePort;
  if (c.targetPort && c.targetPort !== DEFAULT_IN) edge.target_port = c.targetPort;
  return { ...doc, edges: [...doc.edges, edge] };
}

/** Remove nodes (with their edges) and edges (by key). */
export function deleteItems(doc: FlowDocument, nodeIds: Iterable<string>, edgeKeys: Iterable<string> = []): FlowDocument {
  const gone = new Set(nodeIds);
  const goneEdges = new Set(edgeKeys);
  if (!gone.size && !goneEdges.size) return doc;
  return {
    ...doc,
    nodes: doc.nodes.filter((n) => !gone.has(n.id)),
    edges: doc.edges.filter((e) => !gone.has(e.source) && !gone.has(e.target) && !goneEdges.has(edgeKey(e))),
  };
}

export function updateNode(doc: FlowDocument, id: string, patch: Partial<NodeSpec>): FlowDocument {
  return { ...doc, nodes: doc.nodes.map((n) => (n.id === id ? { ...n, ...patch } : n)) };
}

export function setConfig(doc: FlowDocument, id: string, config: Record<string, any>): FlowDocument {
  return updateNode(doc, id, { config });
}

/** Rename a node; its edges follow. Returns null with a reason when the id is not usable. */
export function renameNode(doc: FlowDocument, from: string, to: string): { doc: FlowDocument } | { error: string } {
  if (from === to) return { doc };
  if (!/^[^\s{}@.]+$/.test(to)) return { error: "an id may not contain spaces, braces, '@' or '.'" };
  if (RESERVED.has(to)) return { error: `'${to}' is reserved for references` };
  if (ids(doc).has(to)) return { error: `'${to}' is taken` };
  const mv = (x: string) => (x === from ? to : x);
  return {
    doc: {
      ...doc,
      nodes: doc.nodes.map((n) => (n.id === from ? { ...n, id: to } : n)),
      edges: doc.edges.map((e) => ({ ...e, source: mv(e.source), target: mv(e.target) })),
    },
  };
}

export interface Clipboard {
  nodes: NodeSpec[];
  edges: EdgeSpec[];
}

/** The selected nodes and the edges between them. */
export function copy(doc: FlowDocument, nodeIds: Iterable<string>): Clipboard {
  const sel = new Set(nodeIds);
  return {
    nodes: structuredClone(doc.nodes.filter((n) => sel.has(n.id))),
    edges: structuredClone(doc.edges.filter((e) => sel.has(e.source) && sel.has(e.target))),
  };
}

/** Paste with fresh ids, shifted by `offset`; returns the new ids (to select them). */
export function paste(doc: FlowDocument, clip: Clipboard, offset: Position = { x: 40, y: 40 }): { doc: FlowDocument; ids: string[] } {
  const taken = ids(doc);
  const map = new Map<string, string>();
  const nodes = clip.nodes.map((n) => {
    const id = uniqueId(n.id.replace(/_\d+$/, ""), taken);
    taken.add(id);
    map.set(n.id, id);
    const p = n.position ?? { x: 0, y: 0 };
    return { ...structuredClone(n), id, position: { x: p.x + offset.x, y: p.y + offset.y } };
  });
  const edges = clip.edges.map((e) => {
    const copyEdge: EdgeSpec = { ...e, source: map.get(e.source)!, target: map.get(e.target)! };
    delete copyEdge.id;
    return copyEdge;
  });
  return { doc: { ...doc, nodes: [...doc.nodes, ...nodes], edges: [...doc.edges, ...edges] }, ids: nodes.map((n) => n.id) };
}

/** Undo/redo: a bounded stack of documents around the present one. */
export interface History {
  past: FlowDocument[];
  present: FlowDocument;
  future: FlowDocument[];
}

export function history(doc: FlowDocument): History {
  return { past: [], present: doc, future: [] };
}

export function commit(h: History, doc: FlowDocument): History {
  if (doc === h.present) return h;
  const past = [...h.past, h.present];
  if (past.length > HISTORY_LIMIT) past.shift();
  return { past, present: doc, future: [] };
}

export function undo(h: History): History {
  if (!h.past.length) return h;
  return { past: h.past.slice(0, -1), present: h.past[h.past.length - 1], future: [h.present, ...h.future] };
}

export function redo(h: History): History {
  if (!h.future.length) return h;
  return { past: [...h.past, h.present], present: h.future[0], future: h.future.slice(1) };
}

/** Ids of the nodes upstream of `id` (edges and `requires`), nearest first. */
export function upstreamOf(doc: FlowDocument, id: string): string[] {
  const into = new Map<string, string[]>();
  for (const e of doc.edges) {
    const list = into.get(e.target);
    if (list) list.push(e.source);
    else into.set(e.target, [e.source]);
  }
  for (const n of doc.nodes) {
    for (const r of n.requires ?? []) {
      const list = into.get(n.id);
      if (list) list.push(r);
      else into.set(n.id, [r]);
    }
  }
  const seen = new Set<string>([id]);
  const order: string[] = [];
  let frontier = [id];
  while (frontier.length) {
    const next: string[] = [];
    for (const n of frontier) {
      for (const s of into.get(n) ?? []) {
        if (!seen.has(s)) {
          seen.add(s);
          order.push(s);
          next.push(s);
        }
      }
    }
    frontier = next;
  }
  return order;
}

/** Reference suggestions for a template field of `nodeId`: upstream nodes, inputs and variables. */
export function referenceSuggestions(doc: FlowDocument, nodeId: string, outputs: Record<string, any> = {}): string[] {
  const out: string[] = [];
  for (const up of upstreamOf(doc, nodeId)) {
    out.push(up);
    const value = outputs[up];
    if (value && typeof value === "object" && !Array.isArray(value)) {
      for (const k of Object.keys(value).slice(0, 30)) out.push(`${up}.${k}`);
    }
  }
  for (const k of Object.keys(doc.inputs?.properties ?? {})) out.push(`inputs.${k}`);
  for (const k of Object.keys(doc.variables ?? {})) out.push(`vars.${k}`);
  return out;
}

// ---------------------------------------------------------------- ports drawn on the canvas

/** Source ports the edges leave each node from: an edge must never vanish because the node's
 * settings stopped declaring its port (an invalid config, a renamed case, an error port). */
export function edgeSourcePorts(edges: EdgeSpec[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const e of edges) {
    const port = e.source_port ?? DEFAULT_OUT;
    const list = out.get(e.source);
    if (!list) out.set(e.source, [port]);
    else if (!list.includes(port)) list.push(port);
  }
  return out;
}

/** Declared output ports, then the ones only edges name (`stray`). */
export function drawnOutputs(declared: string[], used: string[] | undefined): { outputs: string[]; stray: string[] } {
  const stray = (used ?? []).filter((p) => !declared.includes(p));
  return { outputs: stray.length ? [...declared, ...stray] : declared, stray };
}

/** Put `nodeId` on the edge `key`: source -> node -> target, keeping the edge's outer ports. */
export function insertOnEdge(doc: FlowDocument, key: string, nodeId: string, inPort: string = DEFAULT_IN, outPort: string = DEFAULT_OUT): FlowDocument {
  const e = doc.edges.find((x) => edgeKey(x) === key);
  if (!e || !doc.nodes.some((n) => n.id === nodeId)) return doc;
  const first: EdgeSpec = { source: e.source, target: nodeId };
  if (e.source_port && e.source_port !== DEFAULT_OUT) first.source_port = e.source_port;
  if (inPort !== DEFAULT_IN) first.target_port = inPort;
  const second: EdgeSpec = { source: nodeId, target: e.target };
  if (outPort !== DEFAULT_OUT) second.source_port = outPort;
  if (e.target_port && e.target_port !== DEFAULT_IN) second.target_port = e.target_port;
  return { ...doc, edges: [...doc.edges.filter((x) => x !== e), first, second] };
}

// ---------------------------------------------------------------- bodies (loop, map, ...)

/** One step into a nested graph: the node holding it and its config field (`body`). */
export interface BodyStep {
  node: string;
  field: string;
}
export type BodyPath = BodyStep[];

const NO_NODES: NodeSpec[] = [];
const NO_EDGES: EdgeSpec[] = [];

function resolveRef(schema: any, root: any): any {
  const ref: unknown = schema?.$ref;
  if (typeof ref !== "string" || !ref.startsWith("#/")) return schema;
  return ref
    .slice(2)
    .split("/")
    .reduce((o: any, k) => (o ? o[k] : undefined), root);
}

/** Config fields of a type that hold a graph (a schema with `nodes` and `edges`): its bodies. */
export function bodyFields(type: NodeType | undefined): string[] {
  const schema = type?.config_schema;
  const props = schema?.properties ?? {};
  const out: string[] = [];
  for (const [name, prop] of Object.entries<any>(props)) {
    const candidates = [prop, ...(Array.isArray(prop?.anyOf) ? prop.anyOf : []), ...(Array.isArray(prop?.allOf) ? prop.allOf : [])];
    if (candidates.some((c) => {
      const r = resolveRef(c, schema);
      return r?.properties?.nodes && r?.properties?.edges;
    }))
      out.push(name);
  }
  return out;
}

/** The graph at `path` (the document itself for []), or null when the path no longer exists. */
export function graphAt(doc: FlowDocument, path: BodyPath): FlowDocument | null {
  let g: FlowDocument = doc;
  for (const step of path) {
    const node = g.nodes.find((n) => n.id === step.node);
    const body = node?.config?.[step.field];
    if (!node || (body !== undefined && (typeof body !== "object" || body === null))) return null;
    g = { nodes: Array.isArray(body?.nodes) ? body.nodes : NO_NODES, edges: Array.isArray(body?.edges) ? body.edges : NO_EDGES };
  }
  return g;
}

/** Apply an edit to the graph at `path`; the document comes back unchanged (same object) when
 * the edit changed nothing, so undo history stays clean. */
export function updateGraphAt(doc: FlowDocument, path: BodyPath, fn: (g: FlowDocument) => FlowDocument): FlowDocument {
  if (!path.length) return fn(doc);
  const [step, ...rest] = path;
  const node = doc.nodes.find((n) => n.id === step.node);
  if (!node) return doc;
  const current = graphAt(doc, [step]);
  if (!current) return doc;
  const next = updateGraphAt(current, rest, fn);
  if (next.nodes === current.nodes && next.edges === current.edges) return doc;
  const old = node.config?.[step.field];
  const body = { ...(old && typeof old === "object" ? old : {}), nodes: next.nodes, edges: next.edges };
  return updateNode(doc, step.node, { config: { ...(node.config ?? {}), [step.field]: body } });
}

/** How the validator names a node inside a body (`loop.body/step`): the prefix of `path`. */
export function bodyPrefix(path: BodyPath): string {
  return path.map((s) => `${s.node}.${s.field}/`).join("");
}
