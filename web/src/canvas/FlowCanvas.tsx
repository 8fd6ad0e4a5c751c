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
import { DEFAULT_IN, DEFAULT_OUT, edgeKey, portsOf, type Connection } from "../state/graph";
import type { NodeRunState, RunState } from "../state/run";
import { useResolvedTheme } from "../theme/theme";
import type { FlowDocument, NodeSpec, NodeType, Position } from "../types";

export const NODE_DRAG_MIME = "application/x-plait-node-type";

export interface CanvasHandle {
  /** The flow position at the centre of the visible canvas (where click-to-add puts a node). */
  center(): Position;
  fitView(): void;
}

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
  onDropType?: (typeName: string, position: Position) => void;
  onNodeActivate?: (nodeId: string) => void;
  canvasRef?: Ref<CanvasHandle>;
}

interface PlaitNodeData extends Record<string, unknown> {
  spec: NodeSpec;
  title: string;
  category: string;
  inputs: string[];
  outputs: string[];
  status: string;
  runNode: NodeRunState | undefined;
  problems: string[];
}

type PlaitFlowNode = Node<PlaitNodeData, "plait">;

const PlaitNode = memo(function PlaitNode({ id, data, selected }: NodeProps<PlaitFlowNode>) {
  const { spec, title, category, inputs, outputs, status, runNode, problems } = data;
  const many = outputs.length > 1;
  const height = Math.max(inputs.length, outputs.length);
  return (
    <div
      className={`plait-node cat-${category} status-${status}${problems.length ? " has-problems" : ""}${selected ? " selected" : ""}`}
      data-testid={`node-${id}`}
      data-status={status}
      data-type={spec.type}
      data-problems={problems.length}
      style={{ minHeight: 44 + (many ? (height - 1) * 20 : 0) }}
      title={problems.join("\n") || undefined}
    >
      <div className="plait-node-head">
        <span className="plait-node-title">{spec.label || spec.id}</span>
        <span className="plait-node-type">{title}</span>
      </div>
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
            <li key={i}>🔧 {t.name}</li>
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
          style={{ top: 22 + i * 20 }}
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
          style={{ top: 22 + i * 20 }}
          data-testid={`handle-${id}-out-${p}`}
          aria-label={`${spec.id} output ${p}`}
        >
          {many && <span className="port-label">{p}</span>}
        </Handle>
      ))}
    </div>
  );
});

const nodeTypes = { plait: PlaitNode };
const MINIMAP_COLORS: Record<string, string> = { running: "#1c7ed6", ok: "#2f9e44", error: "#e03131", waiting: "#f08c00", skipped: "#e9ecef", cancelled: "#e9ecef", unreached: "#e9ecef" };
const minimapColor = (n: Node) => MINIMAP_COLORS[(n.data as PlaitNodeData).status] ?? ((n.data as PlaitNodeData).problems.length ? "#ffc9c9" : "#ced4da");
const EMPTY: string[] = [];
const DELETE_KEYS = ["Delete", "Backspace"];

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

  useImperativeHandle(props.canvasRef, () => ({
    center() {
      const box = wrapper.current?.getBoundingClientRect();
      if (!box) return { x: 0, y: 0 };
      return rf.screenToFlowPosition({ x: box.left + box.width / 2, y: box.top + box.height / 2 });
    },
    fitView() {
      rf.fitView({ padding: 0.15, duration: 0 });
    },
  }));

  // Node data objects keep their identity while nothing about the node changed, so the memoised
  // node component does not re-render (a 200-node flow only redraws what a run event touched).
  const built = useMemo(() => {
    const cache = dataCache.current;
    const next = new Map<string, PlaitNodeData>();
    const out: PlaitFlowNode[] = doc.nodes.map((spec, i) => {
      const type = types.get(spec.type);
      const ports = portsOf(spec, type);
      const outputs = portOverrides?.[spec.id] ?? ports.outputs;
      const status = nodeStatus(run, spec.id);
      const runNode = run?.nodes[spec.id];
      const probs = problems?.[spec.id] ?? EMPTY;
      const prev = cache.get(spec.id);
      const data: PlaitNodeData =
        prev &&
        prev.spec === spec &&
        prev.status === status &&
        prev.runNode === runNode &&
        sameList(prev.problems, probs) &&
        sameList(prev.outputs, outputs) &&
        sameList(prev.inputs, ports.inputs) &&
        prev.title === (type?.title ?? spec.type)
          ? prev
          : {
              spec,
              title: type?.title ?? spec.type,
              category: type?.category ?? "unknown",
              inputs: ports.inputs,
              outputs,
              status,
              runNode,
              problems: probs,
            };
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
  }, [doc.nodes, types, portOverrides, run, problems, selected, readOnly]);

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

  const { onMove, onConnect: connectCb, onDelete, onSelect, onDropType, onNodeActivate } = props;
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
  const onDragOver = useCallback((e: React.DragEvent) => {
    if (e.dataTransfer.types.includes(NODE_DRAG_MIME)) {
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
    }
  }, []);
  const onDrop = useCallback(
    (e: React.DragEvent) => {
      const typeName = e.dataTransfer.getData(NODE_DRAG_MIME);
      if (!typeName || readOnly) return;
      e.preventDefault();
      const p = rf.screenToFlowPosition({ x: e.clientX, y: e.clientY });
      onDropType?.(typeName, { x: p.x - 80, y: p.y - 20 });
    },
    [rf, onDropType, readOnly],
  );
  const onNodeDoubleClick = useCallback((_: unknown, n: Node) => onNodeActivate?.(n.id), [onNodeActivate]);

  return (
    <div className="canvas-wrapper" ref={wrapper} onDragOver={onDragOver} onDrop={onDrop} data-testid="canvas">
      <ReactFlow<PlaitFlowNode, Edge>
        nodes={nodes}
        edges={edges}
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
        fitView={fitOnOpen}
        fitViewOptions={{ padding: 0.15, maxZoom: 1.2 }}
        minZoom={0.1}
        onlyRenderVisibleElements={doc.nodes.length > 150}
        proOptions={{ hideAttribution: true }}
      >
        <Background gap={20} />
        <MiniMap pannable zoomable ariaLabel="Minimap" nodeColor={minimapColor} />
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
