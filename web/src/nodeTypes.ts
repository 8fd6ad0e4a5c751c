/** The node registry as the server describes it (GET /api/v1/node-types), loaded once. */
import { useEffect, useState } from "react";
import { api } from "./api";
import type { NodeType } from "./types";

let cached: Promise<NodeType[]> | null = null;
const listeners = new Set<() => void>();

/** Forget the cached registry and reload it everywhere it is shown (a component was just registered). */
export async function reloadNodeTypes(): Promise<void> {
  cached = null;
  await loadNodeTypes().catch(() => undefined);
  for (const fn of listeners) fn();
}

export function loadNodeTypes(): Promise<NodeType[]> {
  if (!cached) {
    cached = api.nodeTypes().catch((e) => {
      cached = null;
      throw e;
    });
  }
  return cached;
}

export function useNodeTypes(): { list: NodeType[]; byName: Map<string, NodeType>; error: string | null } {
  const [state, setState] = useState<{ list: NodeType[]; byName: Map<string, NodeType>; error: string | null }>({ list: [], byName: new Map(), error: null });
  const [epoch, setEpoch] = useState(0);
  useEffect(() => {
    const bump = () => setEpoch((n) => n + 1);
    listeners.add(bump);
    return () => void listeners.delete(bump);
  }, []);
  useEffect(() => {
    let live = true;
    loadNodeTypes().then(
      (list) => {
        if (!live) return;
        const byName = new Map<string, NodeType>();
        for (const t of list) {
          byName.set(t.name, t);
          // palette entries of components (`component:<Name>`) are nodes of their `node_type`
          const nodeType = (t as any).node_type as string | undefined;
          if (nodeType && !byName.has(nodeType)) byName.set(nodeType, t);
        }
        setState({ list, byName, error: null });
      },
      (e) => live && setState((s) => ({ ...s, error: String(e?.message ?? e) })),
    );
    return () => {
      live = false;
    };
  }, [epoch]);
  return state;
}
