/**
 * A read-only picture of a proposed flow: boxes and arrows in an SVG at 1:1 (scrolled). Not the
 * editor's FlowCanvas: a second React Flow instance would repeat the canvas's per-node test ids
 * and keyboard handling on the same page; a picture is all the card needs.
 */
import { useMemo } from "react";
import type { FlowDocument } from "../../types";

const W = 150;
const H = 40;

/** Positions for nodes that have none: a left-to-right chain following the edges. */
export function layoutOf(flow: FlowDocument): Map<string, { x: number; y: number }> {
  const at = new Map<string, { x: number; y: number }>();
  const nodes = flow.nodes ?? [];
  if (nodes.every((n) => n.position)) {
    for (const n of nodes) at.set(n.id, { x: n.position!.x, y: n.position!.y });
    return at;
  }
  const depth = new Map<string, number>(nodes.map((n) => [n.id, 0]));
  for (let i = 0; i < nodes.length; i++) {
    for (const e of flow.edges ?? []) {
      const d = (depth.get(e.source) ?? 0) + 1;
      if (depth.has(e.target) && d > depth.get(e.target)! && d < nodes.length) depth.set(e.target, d);
    }
  }
  const rows = new Map<number, number>();
  for (const n of nodes) {
    const d = depth.get(n.id) ?? 0;
    const r = rows.get(d) ?? 0;
    rows.set(d, r + 1);
    at.set(n.id, { x: d * (W + 60), y: r * (H + 30) });
  }
  return at;
}

export function MiniFlow({ flow }: { flow: FlowDocument }) {
  const drawn = useMemo(() => {
    const at = layoutOf(flow);
    const xs = [...at.values()].map((p) => p.x);
    const ys = [...at.values()].map((p) => p.y);
    const minX = Math.min(0, ...xs) - 10;
    const minY = Math.min(0, ...ys) - 10;
    const maxX = Math.max(W, ...xs.map((x) => x + W)) + 10;
    const maxY = Math.max(H, ...ys.map((y) => y + H)) + 10;
    return { at, box: `${minX} ${minY} ${maxX - minX} ${maxY - minY}`, width: maxX - minX, height: maxY - minY };
  }, [flow]);
  const { at, box, width, height } = drawn;
  // drawn 1:1 (text stays readable), scrolled when the flow is bigger than the card
  return (
    <div className="assistant-flow-preview" data-testid="assistant-flow-preview">
    <svg viewBox={box} width={width} height={height} role="img" aria-label={`Preview: ${(flow.nodes ?? []).length} steps, ${(flow.edges ?? []).length} connections`}>
      <defs>
        <marker id="assistant-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" className="assistant-mini-arrow" />
        </marker>
      </defs>
      {(flow.edges ?? []).map((e, i) => {
        const a = at.get(e.source);
        const b = at.get(e.target);
        if (!a || !b) return null;
        const x1 = a.x + W;
        const y1 = a.y + H / 2;
        const x2 = b.x;
        const y2 = b.y + H / 2;
        const mid = (x1 + x2) / 2;
        return <path key={e.id ?? i} className="assistant-mini-edge" d={`M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`} markerEnd="url(#assistant-arrow)" />;
      })}
      {(flow.nodes ?? []).map((n) => {
        const p = at.get(n.id)!;
        const label = n.label || n.id;
        return (
          <g key={n.id} className="assistant-mini-node" data-node={n.id}>
            <rect x={p.x} y={p.y} width={W} height={H} rx={6} />
            <text x={p.x + 10} y={p.y + 17}>
              {label.length > 20 ? `${label.slice(0, 19)}…` : label}
            </text>
            <text x={p.x + 10} y={p.y + 32} className="assistant-mini-type">
              {n.type}
            </text>
          </g>
        );
      })}
    </svg>
    </div>
  );
}
