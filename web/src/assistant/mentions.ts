/**
 * `@` mentions in the assistant input (F41, F42): `@query` lists the canvas's nodes; confirming
 * inserts `'<id>'` (no trailing space). A `.` right after such a token lists that node's
 * user-facing settings, from its type's config schema (no network call); confirming inserts the
 * one token `'<id>.<field>' `. The agent resolves both with its component and field tools.
 */
import { humanLabel } from "../forms/labels";
import type { FlowDocument, NodeType } from "../types";

export type MentionQuery =
  | { mode: "node"; query: string; start: number; end: number }
  | { mode: "field"; nodeId: string; query: string; start: number; end: number };

export interface MentionItem {
  /** The node id, or the field name in field mode. */
  id: string;
  label: string;
  /** A second line: the node's type, or the field's description. */
  detail: string;
  /** The text that replaces the query. */
  insert: string;
}

const MAX_ITEMS = 50;

/**
 * The mention being typed at `caret`, or null. `@query` counts at the start or after whitespace or
 * an opening bracket, with no space in the query; `'<id>'.query` is field mode. `start`..`end` is
 * the text a confirmed item replaces.
 */
export function mentionAt(text: string, caret: number): MentionQuery | null {
  const before = text.slice(0, Math.max(0, Math.min(caret, text.length)));
  const field = /'([^'\s]+)'\.([^\s'.]*)$/.exec(before);
  if (field && !field[1].includes(".")) {
    return { mode: "field", nodeId: field[1], query: field[2], start: field.index, end: before.length };
  }
  const node = /(^|[\s([{,;])@([^\s@']*)$/.exec(before);
  if (node) {
    const start = node.index + node[1].length;
    return { mode: "node", query: node[2], start, end: before.length };
  }
  return null;
}

function rank(haystacks: string[], q: string): number {
  if (!q) return 0;
  const needle = q.toLowerCase();
  let best = Infinity;
  for (const h of haystacks) {
    const s = h.toLowerCase();
    if (s.startsWith(needle)) best = Math.min(best, 0);
    else if (s.includes(needle)) best = Math.min(best, 1);
  }
  return best;
}

function sortByRank<T>(items: { item: T; rank: number; order: number }[]): T[] {
  return items
    .filter((x) => x.rank !== Infinity)
    .sort((a, b) => a.rank - b.rank || a.order - b.order)
    .slice(0, MAX_ITEMS)
    .map((x) => x.item);
}

/** A node's display name: its label, else its type's title, else its id. */
export function nodeDisplayName(node: FlowDocument["nodes"][number], type: NodeType | undefined): string {
  return (typeof node.label === "string" && node.label.trim()) || type?.title || node.id;
}

/** The canvas's nodes matching `query` (display name or id), prefix matches first. */
export function nodeMentionItems(doc: FlowDocument, types: NodeType[], query: string): MentionItem[] {
  const byName = new Map(types.map((t) => [t.name, t]));
  return sortByRank(
    doc.nodes.map((n, order) => {
      const type = byName.get(n.type);
      const label = nodeDisplayName(n, type);
      return { item: { id: n.id, label, detail: n.id === label ? n.type : `${n.id} · ${n.type}`, insert: `'${n.id}'` }, rank: rank([label, n.id], query), order };
    }),
  );
}

function isUserFacing(key: string, prop: any): boolean {
  if (key.startsWith("_") || key === "code") return false;
  if (!prop || typeof prop !== "object") return true;
  if (prop.show === false || prop.hidden === true || prop["x-hidden"] === true) return false;
  if (typeof prop.title === "string" && !prop.title.trim()) return false; // explicitly unlabelled
  return true;
}

/** The user-facing settings of node `nodeId` matching `query` (empty when the node is not there). */
export function fieldMentionItems(doc: FlowDocument, types: NodeType[], nodeId: string, query: string): MentionItem[] {
  const node = doc.nodes.find((n) => n.id === nodeId);
  if (!node) return [];
  const type = types.find((t) => t.name === node.type);
  const props: Record<string, any> = { ...(type?.config_schema?.properties ?? {}) };
  for (const k of Object.keys(node.config ?? {})) if (!(k in props)) props[k] = {};
  return sortByRank(
    Object.entries(props)
      .filter(([k, p]) => isUserFacing(k, p))
      .map(([k, p], order) => {
        const label = humanLabel(k, typeof p?.title === "string" ? p.title : undefined);
        return {
          item: { id: k, label, detail: typeof p?.description === "string" ? p.description : "", insert: `'${nodeId}.${k}' ` },
          rank: rank([k, label], query),
          order,
        };
      }),
  );
}

/** The list for a mention query. */
export function mentionItems(q: MentionQuery, doc: FlowDocument, types: NodeType[]): MentionItem[] {
  return q.mode === "node" ? nodeMentionItems(doc, types, q.query) : fieldMentionItems(doc, types, q.nodeId, q.query);
}

/** The text with the query replaced by the item, and where the caret goes. */
export function applyMention(text: string, q: MentionQuery, item: MentionItem): { text: string; caret: number } {
  const next = text.slice(0, q.start) + item.insert + text.slice(q.end);
  return { text: next, caret: q.start + item.insert.length };
}

/** The next highlighted index for an arrow or Tab key (wrapping), or null for other keys. */
export function moveHighlight(key: string, shift: boolean, index: number, count: number): number | null {
  if (!count) return null;
  if (key === "ArrowDown" || (key === "Tab" && !shift)) return (index + 1) % count;
  if (key === "ArrowUp" || (key === "Tab" && shift)) return (index - 1 + count) % count;
  return null;
}
