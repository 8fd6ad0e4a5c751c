/**
 * Applying the assistant's live canvas changes (F22) to a document, and replaying an accepted flow
 * proposal (F23, F26): pure functions over the plait/flow@1 document, reusing the editor's own
 * graph helpers so an assistant edit is the same edit a person makes.
 *
 * They never throw: an update naming a node that is not there (the user removed it, a stale
 * event) leaves the document unchanged (the same object, so no empty undo step).
 */
import { connectionProblem, DEFAULT_IN, DEFAULT_OUT, deleteItems, edgeKey, setConfig } from "../state/graph";
import { freePosition, NODE_W, type Sizes } from "../state/layout";
import type { EdgeSpec, FlowDocument, NodeSpec, Position } from "../types";
import { freshId, mergeFlow, replaceFlow } from "./merge";
import type { FlowProposal, FlowUpdate } from "./types";

/** The horizontal step between a new node and the rightmost one. */
const BESIDE_GAP = 80;

function findNode(doc: FlowDocument, id: string): NodeSpec | undefined {
  return doc.nodes.find((n) => n.id === id);
}

/** Where a node without a position goes: right of the rightmost node, on a free spot. */
export function besidePosition(doc: FlowDocument, sizes: Sizes = {}): Position {
  const placed = doc.nodes.filter((n) => n.position);
  if (!placed.length) return { x: 0, y: 0 };
  const right = placed.reduce((a, b) => (b.position!.x + (sizes[b.id]?.width ?? NODE_W) > a.position!.x + (sizes[a.id]?.width ?? NODE_W) ? b : a));
  const want = { x: right.position!.x + (sizes[right.id]?.width ?? NODE_W) + BESIDE_GAP, y: right.position!.y };
  return freePosition(doc.nodes, want, sizes);
}

function sameEdge(a: EdgeSpec, b: EdgeSpec): boolean {
  const norm = (e: EdgeSpec) => edgeKey({ source: e.source, source_port: e.source_port ?? DEFAULT_OUT, target: e.target, target_port: e.target_port ?? DEFAULT_IN });
  return norm(a) === norm(b);
}

/** The document after one `flow_update`; unchanged (same object) when it does not apply. */
export function applyFlowUpdate(doc: FlowDocument, update: FlowUpdate, sizes: Sizes = {}): FlowDocument {
  try {
    switch (update.action) {
      case "add_component": {
        const node = update.node;
        if (!node || typeof node.id !== "string" || !node.id) return doc;
        const lower = node.id.toLowerCase();
        if (doc.nodes.some((n) => n.id.toLowerCase() === lower)) return doc; // already there
        const placed: NodeSpec = { ...structuredClone(node) };
        if (!placed.position) placed.position = besidePosition(doc, sizes);
        return { ...doc, nodes: [...doc.nodes, placed] };
      }
      case "remove_component": {
        if (!findNode(doc, update.component_id)) return doc;
        return deleteItems(doc, [update.component_id]);
      }
      case "connect": {
        const e = update.edge;
        if (!e || !findNode(doc, e.source) || !findNode(doc, e.target)) return doc;
        if (doc.edges.some((x) => sameEdge(x, e))) return doc;
        const problem = connectionProblem(doc, { source: e.source, sourcePort: e.source_port, target: e.target, targetPort: e.target_port });
        if (problem) return doc;
        // Stored as the editor stores a drawn edge: default ports left out, an id kept.
        const edge: EdgeSpec = { ...e };
        if (edge.source_port === DEFAULT_OUT) delete edge.source_port;
        if (edge.target_port === DEFAULT_IN) delete edge.target_port;
        return { ...doc, edges: [...doc.edges, edge] };
      }
      case "configure": {
        const node = findNode(doc, update.component_id);
        if (!node || !update.params || typeof update.params !== "object") return doc;
        // As the server's working flow does: a null value removes the field (its default applies).
        const config: Record<string, any> = { ...(node.config ?? {}) };
        for (const [k, v] of Object.entries(update.params)) {
          if (v === null || v === undefined) delete config[k];
          else config[k] = structuredClone(v);
        }
        return setConfig(doc, node.id, config);
      }
      case "edit_field": {
        const node = findNode(doc, update.component_id);
        if (!node || typeof update.field !== "string" || !update.field) return doc;
        return setConfig(doc, node.id, { ...(node.config ?? {}), [update.field]: structuredClone(update.new_value) });
      }
      case "set_flow":
        return update.flow && Array.isArray(update.flow.nodes) ? replaceFlow(doc, update.flow) : doc;
      default:
        // select_output, set_connection_mode: plait's nodes have no selected output or
        // connection mode to switch; propose_plan is not a canvas change.
        return doc;
    }
  } catch {
    return doc;
  }
}

/** The proposal's replay order (F23): the `set_flow` first, then the tail in arrival order. */
export function replayProposal(proposal: FlowProposal): FlowUpdate[] {
  return [{ action: "set_flow", flow: proposal.flow }, ...proposal.tail];
}

/** `update` with its node ids renamed by `idMap` (after a merge gave some proposal nodes new ids). */
export function remapUpdate(update: FlowUpdate, idMap: Record<string, string>): FlowUpdate {
  const mv = (id: string) => idMap[id] ?? id;
  switch (update.action) {
    case "add_component":
      return { ...update, node: { ...update.node, id: mv(update.node.id) } };
    case "connect":
      return { ...update, edge: { ...update.edge, source: mv(update.edge.source), target: mv(update.edge.target) } };
    case "remove_component":
    case "configure":
    case "edit_field":
    case "select_output":
    case "set_connection_mode":
      return { ...update, component_id: mv(update.component_id) };
    default:
      return update;
  }
}

export type ApplyMode = "add" | "replace";

export interface ProposalResult {
  doc: FlowDocument;
  idMap: Record<string, string>;
  /** Set when tail updates were replayed after the flow (F23 logs it). */
  warning: string | null;
}

/**
 * The canvas after an accepted proposal, as one document (one batched commit, F28): the flow
 * merged (`add`) or swapped in (`replace`), then the buffered tail replayed in order, following
 * any ids the merge renamed. A tail node whose id clashes gets a fresh id too.
 */
export function applyProposal(canvas: FlowDocument, proposal: FlowProposal, mode: ApplyMode = "replace", sizes: Sizes = {}): ProposalResult {
  const first = mode === "add" ? mergeFlow(canvas, proposal.flow, sizes) : { doc: replaceFlow(canvas, proposal.flow), idMap: {} };
  let doc = first.doc;
  const idMap: Record<string, string> = { ...first.idMap };
  for (const raw of proposal.tail) {
    let u = remapUpdate(raw, idMap);
    if (u.action === "add_component" && u.node && typeof u.node.id === "string") {
      const lower = u.node.id.toLowerCase();
      if (doc.nodes.some((n) => n.id.toLowerCase() === lower)) {
        const id = freshId(u.node.id, new Set(doc.nodes.map((n) => n.id.toLowerCase())), u.node.type);
        idMap[u.node.id] = id;
        u = { ...u, node: { ...u.node, id } };
      }
    }
    doc = applyFlowUpdate(doc, u, sizes);
  }
  const warning = proposal.tail.length
    ? `Replayed ${proposal.tail.length} buffered canvas change${proposal.tail.length === 1 ? "" : "s"} after the proposed flow.`
    : null;
  return { doc, idMap, warning };
}
