/**
 * `@` mentions in the input (F41/F42): the list of canvas steps (or, after `'<id>'.`, of that
 * step's fields), arrows/Tab to move, Enter or a click to insert, Escape to close. The highlighted
 * step is selected on the canvas as a preview. Parsing and listing are the pure mentions.ts.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { applyMention, mentionAt, mentionItems, moveHighlight, type MentionItem } from "../mentions";
import type { CanvasBridge } from "../types";

const PREVIEW_DELAY_MS = 150;

export interface MentionsState {
  open: boolean;
  items: MentionItem[];
  active: number;
  fieldMode: boolean;
  setActive: (i: number) => void;
  close: () => void;
  /** Handle a key while the list is open; true when it was used. */
  onKey: (e: React.KeyboardEvent<HTMLTextAreaElement>, put: (text: string, caret: number) => void) => boolean;
  pick: (i: number, put: (text: string, caret: number) => void) => void;
}

export function useMentions(bridge: CanvasBridge, text: string, caret: number): MentionsState {
  const query = useMemo(() => mentionAt(text, caret), [text, caret]);
  const [dismissed, setDismissed] = useState<string | null>(null);
  const key = query ? `${query.start}:${text.slice(query.start, caret)}` : null;
  const items = useMemo(() => (query ? mentionItems(query, bridge.document(), bridge.nodeTypes()) : []), [query, bridge]);
  const [active, setActive] = useState(0);
  const open = !!query && items.length > 0 && dismissed !== key;
  useEffect(() => setActive(0), [key]);
  useEffect(() => {
    if (dismissed !== null && key === null) setDismissed(null);
  }, [dismissed, key]);
  // preview: the highlighted step is selected on the canvas, once the highlight rests (arrow keys
  // held down would otherwise re-select the canvas on every row)
  const previewed = useRef<string | null>(null);
  useEffect(() => {
    const item = open ? items[Math.min(active, items.length - 1)] : undefined;
    const id = item && query ? (query.mode === "field" ? query.nodeId : item.id) : null;
    if (id === previewed.current) return;
    const t = setTimeout(() => {
      previewed.current = id;
      bridge.select(id ? [id] : []);
    }, PREVIEW_DELAY_MS);
    return () => clearTimeout(t);
  }, [open, items, active, bridge, query]);

  const close = useCallback(() => setDismissed(key), [key]);
  const pick = useCallback(
    (i: number, put: (text: string, caret: number) => void) => {
      const item = items[i];
      if (!query || !item) return;
      const r = applyMention(text, query, item);
      put(r.text, r.caret);
    },
    [items, query, text],
  );
  const onKey = (e: React.KeyboardEvent<HTMLTextAreaElement>, put: (text: string, caret: number) => void): boolean => {
    const moved = moveHighlight(e.key, e.shiftKey, active, items.length);
    if (moved !== null) {
      e.preventDefault();
      setActive(moved);
      return true;
    }
    if (e.key === "Enter") {
      e.preventDefault();
      pick(active, put);
      return true;
    }
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      close();
      return true;
    }
    return false;
  };
  return { open, items, active, fieldMode: query?.mode === "field", setActive, close, onKey, pick };
}

export function MentionList({ state, onPick }: { state: MentionsState; onPick: (i: number) => void }) {
  const list = useRef<HTMLUListElement>(null);
  useEffect(() => {
    list.current?.querySelector<HTMLElement>("[aria-selected=true]")?.scrollIntoView?.({ block: "nearest" });
  }, [state.active]);
  return (
    <ul className="assistant-popover" data-testid="assistant-mentions" role="listbox" aria-label={state.fieldMode ? "Fields of the step" : "Steps on the canvas"} ref={list}>
      {state.items.map((item, i) => (
        <li
          key={item.id}
          role="option"
          data-testid="assistant-mention-item"
          data-id={item.id}
          aria-selected={i === state.active}
          onMouseDown={(e) => e.preventDefault()}
          onMouseEnter={() => state.setActive(i)}
          onClick={() => onPick(i)}
        >
          <span>{item.label}</span>
          <span className="assistant-muted">{item.detail}</span>
        </li>
      ))}
    </ul>
  );
}
