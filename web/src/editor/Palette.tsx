/** The node palette: types from the registry grouped by category, searchable, draggable. */
import { memo, useMemo, useState } from "react";
import { NODE_DRAG_MIME } from "../canvas/FlowCanvas";
import { nodeGroup, nodeIcon } from "../canvas/nodeLook";
import type { NodeType } from "../types";

const ORDER = ["triggers", "ai", "agents", "logic", "flow", "data", "integrations", "human", "outputs"];

export function groupTypes(types: NodeType[], query: string): [string, NodeType[]][] {
  const q = query.trim().toLowerCase();
  const groups = new Map<string, NodeType[]>();
  for (const t of types) {
    if (q && !`${t.name} ${t.title} ${t.description} ${t.category}`.toLowerCase().includes(q)) continue;
    const list = groups.get(t.category) ?? [];
    list.push(t);
    groups.set(t.category, list);
  }
  const rank = (c: string) => {
    const i = ORDER.indexOf(c);
    return i < 0 ? ORDER.length : i;
  };
  return [...groups.entries()].sort((a, b) => rank(a[0]) - rank(b[0]) || a[0].localeCompare(b[0]));
}

export const Palette = memo(function Palette({ types, onAdd, disabled }: { types: NodeType[]; onAdd: (t: NodeType) => void; disabled?: boolean }) {
  const [query, setQuery] = useState("");
  const groups = useMemo(() => groupTypes(types, query), [types, query]);
  return (
    <aside className="palette" aria-label="Node palette" data-testid="palette">
      <label htmlFor="palette-search" className="visually-hidden">
        Search node types
      </label>
      <input id="palette-search" type="search" placeholder="Search nodes" data-testid="palette-search" value={query} onChange={(e) => setQuery(e.target.value)} />
      {groups.length === 0 && <p className="muted">No node type matches.</p>}
      {groups.map(([cat, list]) => (
        <section key={cat} className="palette-group" data-testid={`palette-group-${cat}`}>
          <h3>{cat}</h3>
          <ul>
            {list.map((t) => {
              const typeName = ((t as any).node_type as string | undefined) ?? t.name;
              const group = nodeGroup(typeName, t);
              return (
              <li key={t.name}>
                <button
                  type="button"
                  className={`palette-item cat-${t.category} grp-${group}`}
                  draggable={!disabled}
                  disabled={disabled}
                  data-testid={`palette-item-${t.name}`}
                  title={`${t.description}\nDrag onto the canvas, or press Enter to add it in the middle.`}
                  aria-label={`Add ${t.title} node`}
                  onDragStart={(e) => {
                    e.dataTransfer.setData(NODE_DRAG_MIME, t.name);
                    e.dataTransfer.effectAllowed = "copy";
                  }}
                  onClick={() => onAdd(t)}
                >
                  <span className="palette-title">
                    <span className="palette-icon" aria-hidden="true">
                      {nodeIcon(typeName, group)}
                    </span>{" "}
                    {t.title}
                  </span>
                  <span className="palette-desc">{t.description}</span>
                </button>
              </li>
              );
            })}
          </ul>
        </section>
      ))}
    </aside>
  );
});
