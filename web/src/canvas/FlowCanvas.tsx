/**
 * The canvas: the only file that imports the graph engine (@xyflow/react). Everything else speaks
 * the plait document (nodes, edges, ports), so the engine stays swappable. The document comes in
 * as props; edits go out as callbacks (move, connect, delete, drop, select).
 */
import {
  Background,
  Controls,
  Handle,
  MiniMap,
  Position as HandlePosition,
  ReactFlow,
  ReactFlowProvider,
  applyEdgeChanges,
  applyNodeChanges,
  useReactFlow,
  type Edge,
  type EdgeChange,
  type Node,
  type NodeChange,
  type NodeProps,
  type OnConnect,
} from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import { memo, useCallback, useEffect, useImperativeHandle, useMemo, useRef, useState, type Ref } from "react";
import { bodyFields, DEFAULT_IN, DEFAULT_OUT, drawnOutputs, edgeKey, edgeSourcePorts, portsOf, type Connection } from "../state/graph";
import { fmtDuration } from "../ui/format";
import { nodeGroup, nodeIcon, nodeSummary, type NodeGroup } from "./nodeLook";
import type { NodeRunState, RunState } from "../state/run";
import { useResolvedTheme } from "../theme/theme";
import type { FlowDocument, NodeSpec, NodeType, Position } from "../types";

export const NODE_DRAG_MIME = "application/x-plait-node-type";

export interface CanvasHandle {
  /** The flow position at the centre of the visible canvas (where click-to-add puts a node). */
  center(): Position;
  fitView(): void;
  /** Pan (keeping the zoom) so the box at `p` (default: one node's size) is in view, if it is not already. */
  reveal(p: Position, size?: { width: number; height: number }): void;
  /** measured node sizes (what auto-layout spaces by) */
  sizes(): Record<string, { width: number; height: number }>;
}

/** The smallest zoom a flow opens at: node text stays >= 11 px (13 px * 0.85). A flow wider
 * than the canvas at this zoom opens at its start (left), not squeezed to fit. */
export const READABLE_ZOOM = 0.85;
/** Flows bigger than this open fitted whatever the zoom (an overview; text cannot be read). */
const READABLE_MAX_NODES = 60;

export interface FlowCanvasProps {
  doc: FlowDocument;
  types: Map<string, NodeType>;
  /** output ports computed by the server for config-dependent types, by node id */
  portOverrides?: Record<string, string[]>;
  run?: RunState | null;
  /** validation messages by node id */
  problems?: Record<string, string[]>;
  selected: ReadonlySet<string>;
  readOnly?: boolean;
  onSelect?: (nodeIds: string[], edgeKeys: string[]) => void;
  onMove?: (positions: Record<string, Position>) => void;
  onConnect?: (c: Connection) => void;
  onDelete?: (nodeIds: string[], edgeKeys: string[]) => void;
  /** a palette type dropped at `position`; `onEdge` is the key of the edge it was dropped on */
  onDropType?: (typeName: string, position: Position, onEdge?: string) => void;
  onNodeActivate?: (nodeId: string) => void;
  /** double-click on a node with a body (loop, map): open it */
  onOpenBody?: (nodeId: string) => void;
  canvasRef?: Ref<CanvasHandle>;
}

interface PlaitNodeData extends Record<string, unknown> {
  spec: NodeSpec;
  title: string;
  group: NodeGroup;
  icon: string;
  summary: string;
  inputs: string[];
  outputs: string[];
  /** output ports only an edge names (the config no longer declares them): drawn, marked */
  strayOutputs: string[];
  /** the node has a body (loop, map): double-click opens it */
  body: number | null;
  status: string;
  runNode: NodeRunState | undefined;
  problems: string[];
}

type PlaitFlowNode = Node<PlaitNodeData, "plait">;

const PORT_TOP = 30;
const PORT_STEP = 24;
const STATUS_TEXT: Record<string, string> = { running: "running", ok: "done", error: "failed", waiting: "waiting", skipped: "skipped", cancelled: "cancelled", pending: "pending", unreached: "not reached" };

const PlaitNode = memo(function PlaitNode({ id, data, selected }: NodeProps<PlaitFlowNode>) {
  const { spec, title, group, icon, summary, inputs, outputs, strayOutputs, body, status, runNode, problems } = data;
  const many = outputs.length > 1;
  const height = Math.max(inputs.length, outputs.length);
  const label = spec.label || spec.id;
  const showStatus = status !== "idle";
  return (
    <div
      className={`plait-node grp-${group} status-${status}${problems.length ? " has-problems" : ""}${selected ? " selected" : ""}${body !== null ? " has-body" : ""}`}
      data-testid={`node-${id}`}
      data-status={status}
      data-type={spec.type}
      data-group={group}
      data-problems={problems.length}
      style={{ minHeight: 56 + (many ? (height - 1) * PORT_STEP : 0) }}
      title={problems.join("\n") || (body !== null ? "Double-click to open the body" : undefined)}
    >
      <div className="plait-node-head">
        <span className="plait-node-icon" aria-hidden="true">
          {icon}
        </span>
        <span className="plait-node-names">
          <span className="plait-node-title" data-testid={`node-title-${id}`}>
            {label}
          </span>
          <span className="plait-node-type">{label === spec.id && title.toLowerCase() === spec.id.toLowerCase() ? spec.type : title}</span>
        </span>
      </div>
      {summary && (
        <div className="plait-node-summary" data-testid={`node-summary-${id}`} title={summary}>
          {summary}
        </div>
      )}
      {body !== null && (
        <div className="plait-node-body" data-testid={`node-body-${id}`}>
          ❐ body · {body} node{body === 1 ? "" : "s"}
        </div>
      )}
      {showStatus && (
        <div className="plait-node-badges">
          <span className={`badge badge-${status}`} data-testid={`node-badge-${id}`}>
            {STATUS_TEXT[status] ?? status}
          </span>
          {runNode?.durationMs !== undefined && (
            <span className="badge badge-time" data-testid={`node-duration-${id}`}>
              {fmtDuration(runNode.durationMs)}
            </span>
          )}
        </div>
      )}
      {problems.length > 0 && (
        <div className="plait-node-problems" data-testid={`node-problems-${id}`} role="status">
          ⚠ {problems[0]}
          {problems.length > 1 ? ` (+${problems.length - 1})` : ""}
        </div>
      )}
      {runNode?.preview ? (
        <div className="plait-node-preview" data-testid={`node-preview-${id}`}>
          {runNode.preview.slice(-240)}
        </div>
      ) : null}
      {runNode?.toolCalls.length ? (
        <ul className="plait-node-tools" data-testid={`node-tools-${id}`}>
          {runNode.toolCalls.slice(-3).map((t, i) => (
            <li key={i}>⚒ {t.name}</li>
          ))}
        </ul>
      ) : null}
      {runNode?.error && status === "error" ? <div className="plait-node-error">{runNode.error.slice(0, 160)}</div> : null}
      {inputs.map((p, i) => (
        <Handle
          key={`in-${p}`}
          type="target"
          position={HandlePosition.Left}
          id={p}
          style={{ top: PORT_TOP + i * PORT_STEP }}
          data-testid={`handle-${id}-in-${p}`}
          aria-label={`${spec.id} input ${p}`}
        />
      ))}
      {outputs.map((p, i) => (
        <Handle
          key={`out-${p}`}
          type="source"
          position={HandlePosition.Right}
          id={p}
          className={strayOutputs.includes(p) ? "stray-port" : undefined}
          style={{ top: PORT_TOP + i * PORT_STEP }}
          data-testid={`handle-${id}-out-${p}`}
          aria-label={`${spec.id} output ${p}`}
          title={strayOutputs.includes(p) ? `an edge leaves from "${p}", which this node's settings no longer define` : undefined}
        >
          {(many || strayOutputs.includes(p)) && <span className="port-label">{p}</span>}
        </Handle>
      ))}
    </div>
  );
});

const nodeTypes = { plait: PlaitNode };
const MINIMAP_COLORS: Record<string, string> = { running: "var(--run)", ok: "var(--ok)", error: "var(--err)", waiting: "var(--warn)", skipped: "var(--line)", cancelled: "var(--line)", unreached: "var(--line)" };
const minimapColor = (n: Node) => {
  const d = n.data as PlaitNodeData;
  return MINIMAP_COLORS[d.status] ?? (d.problems.length ? "var(--err-line)" : `var(--cat-${d.group})`);
};
const EMPTY: string[] = [];
const MINIMAP_SIZE = { width: 150, height: 100 };
const DELETE_KEYS = ["Delete", "Backspace"];

/** The edge under a screen point (its wide invisible hit path counts), by id. */
function edgeAt(x: number, y: number): string | undefined {
  const hit = document
    .elementsFromPoint(x, y)
    .map((el) => el.closest(".react-flow__edge"))
    .find((el): el is Element => Boolean(el));
  return hit?.getAttribute("data-id") ?? undefined;
}

function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** A node the run has no event for is `pending` while the run goes on and `unreached` (dimmed)
 * once a cancelled or failed run has stopped short of it. */
export function nodeStatus(run: RunState | null | undefined, id: string): string {
  if (!run || run.status === "idle") return "idle";
  const known = run.nodes[id]?.status;
  if (known) return known;
  if (run.status === "starting" || run.status === "running" || run.status === "queued") return "pending";
  return run.status === "cancelled" || run.status === "failed" ? "unreached" : "idle";
}

function FlowCanvasInner(props: FlowCanvasProps) {
  const { doc, types, portOverrides, run, problems, selected, readOnly } = props;
  const rf = useReactFlow();
  const colorMode = useResolvedTheme();
  const wrapper = useRef<HTMLDivElement>(null);
  const dataCache = useRef(new Map<string, PlaitNodeData>());
  // Fit the view to the flow it opened with; an empty canvas keeps zoom 1 when nodes arrive.
  const [fitOnOpen] = useState(() => doc.nodes.length > 0);

  /** Fit the flow, but never below READABLE_ZOOM for a flow small enough to read: then show its
   * left end (where it starts), vertically centred. */
  const openView = useCallback(() => {
    const box = wrapper.current?.getBoundingClientRect();
    const ns = rf.getNodes();
    if (!box || !ns.length) return;
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const n of ns) {
      const w = n.measured?.width ?? 200, h = n.measured?.height ?? 70;
      x0 = Math.min(x0, n.position.x);
      y0 = Math.min(y0, n.position.y);
      x1 = Math.max(x1, n.position.x + w);
      y1 = Math.max(y1, n.position.y + h);
    }
    const pad = 40;
    const fit = Math.min((box.width - 2 * pad) / (x1 - x0), (box.height - 2 * pad) / (y1 - y0), 1.1);
    if (fit >= READABLE_ZOOM || ns.length > READABLE_MAX_NODES) {
      rf.fitView({ padding: 0.12, maxZoom: 1.1, duration: 0 });
      return;
    }
    const zoom = READABLE_ZOOM;
    const fitsTall = (y1 - y0) * zoom <= box.height - 2 * pad;
    const y = fitsTall ? box.height / 2 - ((y0 + y1) / 2) * zoom : pad - y0 * zoom;
    void rf.setViewport({ x: pad - x0 * zoom, y, zoom }, { duration: 0 });
  }, [rf]);
  const onInit = useCallback(() => {
    if (!fitOnOpen || rf.getNodes().length > READABLE_MAX_NODES) return;
    // node sizes are known one frame after the first render
    requestAnimationFrame(() => requestAnimationFrame(openView));
  }, [fitOnOpen, openView]);

  useImperativeHandle(props.canvasRef, () => ({
    center() {
      const box = wrapper.current?.getBoundingClientRect();
      if (!box) return { x: 0, y: 0 };
      return rf.screenToFlowPosition({ x: box.left + box.width / 2, y: box.top + box.height / 2 });
    },
    fitView() {
      openView();
    },
    reveal(p, size = { width: 196, height: 80 }) {
      const box = wrapper.current?.getBoundingClientRect();
      if (!box) return;
      const tl = rf.flowToScreenPosition(p);
      const br = rf.flowToScreenPosition({ x: p.x + size.width, y: p.y + size.height });
      if (tl.x >= box.left && tl.y >= box.top && br.x <= box.right && br.y <= box.bottom) return;
      rf.setCenter(p.x + size.width / 2, p.y + size.height / 2, { zoom: rf.getViewport().zoom });
    },
    sizes() {
      const out: Record<string, { width: number; height: number }> = {};
      for (const n of rf.getNodes()) if (n.measured?.width && n.measured?.height) out[n.id] = { width: n.measured.width, height: n.measured.height };
      return out;
    },
  }));

  // Node data objects keep their identity while nothing about the node changed, so the memoised
  // node component does not re-render (a 200-node flow only redraws what a run event touched).
  const built = useMemo(() => {
    const cache = dataCache.current;
    const next = new Map<string, PlaitNodeData>();
    const used = edgeSourcePorts(doc.edges);
    const out: PlaitFlowNode[] = doc.nodes.map((spec, i) => {
      const type = types.get(spec.type);
      const ports = portsOf(spec, type);
      // ports of a config-dependent type before the server computed them are provisional: the
      // edges' ports are drawn, none is marked as stray
      const override = portOverrides?.[spec.id];
      const usedPorts = used.get(spec.id);
      const provisional = !override && Boolean((type as any)?.ports_from_config);
      let declared = override ?? ports.outputs;
      if (provisional && type?.output_ports === "dynamic" && usedPorts?.length && !usedPorts.includes(DEFAULT_OUT) && sameList(declared, [DEFAULT_OUT])) declared = [];
      const drawn = drawnOutputs(declared, usedPorts);
      const outputs = drawn.outputs;
      const stray = provisional ? EMPTY : drawn.stray;
      const status = nodeStatus(run, spec.id);
      const runNode = run?.nodes[spec.id];
      const probs = problems?.[spec.id] ?? EMPTY;
      const title = type?.title ?? spec.type;
      const prev = cache.get(spec.id);
      let data: PlaitNodeData;
      if (
        prev &&
        prev.spec === spec &&
        prev.status === status &&
        prev.runNode === runNode &&
        sameList(prev.problems, probs) &&
        sameList(prev.outputs, outputs) &&
        sameList(prev.inputs, ports.inputs) &&
        prev.title === title
      )
        data = prev;
      else {
        const group = nodeGroup(spec.type, type);
        const field = bodyFields(type)[0];
        const body = field ? spec.config?.[field] : undefined;
        data = {
          spec,
          title,
          group,
          icon: nodeIcon(spec.type, group),
          summary: nodeSummary(spec),
          inputs: ports.inputs,
          outputs,
          strayOutputs: stray,
          body: field ? (Array.isArray(body?.nodes) ? body.nodes.length : 0) : null,
          status,
          runNode,
          problems: probs,
        };
      }
      next.set(spec.id, data);
      return {
        id: spec.id,
        type: "plait" as const,
        position: spec.position ?? { x: (i % 8) * 240, y: Math.floor(i / 8) * 120 },
        data,
        selected: selected.has(spec.id),
        deletable: !readOnly,
        draggable: !readOnly,
        connectable: !readOnly,
      };
    });
    dataCache.current = next;
    return out;
  }, [doc.nodes, doc.edges, types, portOverrides, run, problems, selected, readOnly]);

  const [nodes, setNodes] = useState<PlaitFlowNode[]>(built);
  useEffect(() => {
    setNodes((prev) => {
      const byId = new Map(prev.map((n) => [n.id, n]));
      return built.map((b) => {
        const p = byId.get(b.id);
        if (!p) return b;
        if (p.data === b.data && p.selected === b.selected && p.position.x === b.position.x && p.position.y === b.position.y && p.draggable === b.draggable) return p;
        return { ...b, measured: p.measured, dragging: p.dragging };
      });
    });
  }, [built]);

  const fired = run?.firedEdges;
  const active = run && (run.status === "running" || run.status === "starting" || run.status === "waiting");
  const builtEdges = useMemo<Edge[]>(
    () =>
      doc.edges.map((e) => {
        const key = edgeKey(e);
        const isFired = Boolean(fired?.[key]);
        const dimmed = (id: string) => ["skipped", "unreached"].includes(nodeStatus(run, id));
        const skipped = run && (dimmed(e.target) || dimmed(e.source));
        return {
          id: key,
          source: e.source,
          target: e.target,
          sourceHandle: e.source_port ?? DEFAULT_OUT,
          targetHandle: e.target_port ?? DEFAULT_IN,
          animated: Boolean(isFired && active),
          className: `${isFired ? "fired" : ""}${skipped ? " skipped" : ""}`,
          deletable: !readOnly,
          ariaLabel: `edge ${key}`,
        };
      }),
    [doc.edges, fired, active, run, readOnly],
  );
  const [edges, setEdges] = useState<Edge[]>(builtEdges);
  useEffect(() => {
    setEdges((prev) => {
      const sel = new Set(prev.filter((e) => e.selected).map((e) => e.id));
      return builtEdges.map((e) => (sel.has(e.id) ? { ...e, selected: true } : e));
    });
  }, [builtEdges]);

  const onNodesChange = useCallback((changes: NodeChange<PlaitFlowNode>[]) => {
    // removals go through onDelete (the document), everything else is local view state
    setNodes((ns) => applyNodeChanges(changes.filter((c) => c.type !== "remove"), ns));
  }, []);
  const onEdgesChange = useCallback((changes: EdgeChange[]) => {
    setEdges((es) => applyEdgeChanges(changes.filter((c) => c.type !== "remove"), es));
  }, []);

  const { onMove, onConnect: connectCb, onDelete, onSelect, onDropType, onNodeActivate, onOpenBody } = props;
  const onNodeDragStop = useCallback(
    (_: unknown, __: unknown, dragged: PlaitFlowNode[]) => {
      const positions: Record<string, Position> = {};
      for (const n of dragged) positions[n.id] = n.position;
      onMove?.(positions);
    },
    [onMove],
  );
  const onConnect: OnConnect = useCallback(
    (c) => connectCb?.({ source: c.source, sourcePort: c.sourceHandle, target: c.target, targetPort: c.targetHandle }),
    [connectCb],
  );
  const onDeleteItems = useCallback(
    ({ nodes: ns, edges: es }: { nodes: Node[]; edges: Edge[] }) => onDelete?.(ns.map((n) => n.id), es.map((e) => e.id)),
    [onDelete],
  );
  const onSelectionChange = useCallback(
    ({ nodes: ns, edges: es }: { nodes: Node[]; edges: Edge[] }) => onSelect?.(ns.map((n) => n.id), es.map((e) => e.id)),
    [onSelect],
  );
  // the edge a palette drag is over is highlighted: dropping there puts the node on it
  const [dropEdge, setDropEdge] = useState<string | null>(null);
  const onDragOver = useCallback((e: React.DragEvent) => {
    if (e.dataTransfer.types.includes(NODE_DRAG_MIME)) {
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
      const id = edgeAt(e.clientX, e.clientY) ?? null;
      setDropEdge((d) => (d === id ? d : id));
    }
  }, []);
  const onDragLeave = useCallback(() => setDropEdge(null), []);
  const onDrop = useCallback(
    (e: React.DragEvent) => {
      const typeName = e.dataTransfer.getData(NODE_DRAG_MIME);
      if (!typeName || readOnly) return;
      e.preventDefault();
      const p = rf.screenToFlowPosition({ x: e.clientX, y: e.clientY });
      setDropEdge(null);
      onDropType?.(typeName, { x: p.x - 90, y: p.y - 28 }, edgeAt(e.clientX, e.clientY));
    },
    [rf, onDropType, readOnly],
  );
  const onNodeDoubleClick = useCallback(
    (_: unknown, n: Node) => {
      if ((n.data as PlaitNodeData).body !== null && onOpenBody) onOpenBody(n.id);
      else onNodeActivate?.(n.id);
    },
    [onNodeActivate, onOpenBody],
  );

  return (
    <div className="canvas-wrapper" ref={wrapper} onDragOver={onDragOver} onDragLeave={onDragLeave} onDrop={onDrop} data-testid="canvas">
      <ReactFlow<PlaitFlowNode, Edge>
        nodes={nodes}
        edges={dropEdge ? edges.map((e) => (e.id === dropEdge ? { ...e, className: `${e.className ?? ""} drop-target` } : e)) : edges}
        nodeTypes={nodeTypes}
        colorMode={colorMode}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onNodeDragStop={onNodeDragStop}
        onConnect={onConnect}
        onDelete={onDeleteItems}
        onSelectionChange={onSelectionChange}
        onNodeDoubleClick={onNodeDoubleClick}
        deleteKeyCode={readOnly ? null : DELETE_KEYS}
        nodesConnectable={!readOnly}
        onInit={onInit}
        fitView={fitOnOpen && doc.nodes.length > READABLE_MAX_NODES}
        fitViewOptions={{ padding: 0.12, maxZoom: 1.1 }}
        minZoom={0.1}
        zoomOnDoubleClick={false}
        onlyRenderVisibleElements={doc.nodes.length > 150}
        proOptions={{ hideAttribution: true }}
      >
        <Background gap={20} />
        <MiniMap pannable zoomable ariaLabel="Minimap" nodeColor={minimapColor} style={MINIMAP_SIZE} />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}

export default function FlowCanvas(props: FlowCanvasProps) {
  return (
    <ReactFlowProvider>
      <FlowCanvasInner {...props} />
    </ReactFlowProvider>
  );
}
