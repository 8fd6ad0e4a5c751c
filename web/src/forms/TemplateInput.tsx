/** A text field that completes `{{` references (upstream node ids and outputs, inputs, vars). */
import { useId, useMemo, useRef, useState } from "react";

interface Props {
  id: string;
  value: string;
  onChange: (v: string) => void;
  suggestions: string[];
  multiline?: boolean;
  testId: string;
  invalid?: boolean;
  describedBy?: string;
  placeholder?: string;
  /** when no <label for> names the field (a value in a row) */
  ariaLabel?: string;
}

/** The partial reference being typed before the caret (`{{rou` -> "rou"), or null. */
export function openReference(text: string, caret: number): string | null {
  const before = text.slice(0, caret);
  const start = before.lastIndexOf("{{");
  if (start < 0) return null;
  const partial = before.slice(start + 2);
  if (partial.includes("}}") || /[\s]/.test(partial.trimStart())) return null;
  return partial.trimStart();
}

/** Insert `ref}}` over the partial reference; returns the new text and caret. */
export function insertReference(text: string, caret: number, ref: string): { text: string; caret: number } {
  const before = text.slice(0, caret);
  const start = before.lastIndexOf("{{") + 2;
  const after = text.slice(caret);
  const close = after.startsWith("}}") ? "" : "}}";
  const next = text.slice(0, start) + ref + close + after;
  return { text: next, caret: start + ref.length + 2 };
}

export function TemplateInput({ id, value, onChange, suggestions, multiline, testId, invalid, describedBy, placeholder, ariaLabel }: Props) {
  const [partial, setPartial] = useState<string | null>(null);
  const [active, setActive] = useState(0);
  const ref = useRef<HTMLInputElement & HTMLTextAreaElement>(null);
  const listId = useId();
  const matches = useMemo(() => {
    if (partial === null) return [];
    const p = partial.toLowerCase();
    return suggestions.filter((s) => s.toLowerCase().includes(p)).slice(0, 12);
  }, [partial, suggestions]);
  const open = matches.length > 0;

  const update = (text: string, caret: number) => {
    onChange(text);
    setPartial(openReference(text, caret));
    setActive(0);
  };
  const choose = (s: string) => {
    const el = ref.current;
    const caret = el?.selectionStart ?? value.length;
    const next = insertReference(value, caret, s);
    onChange(next.text);
    setPartial(null);
    requestAnimationFrame(() => {
      el?.focus();
      el?.setSelectionRange(next.caret, next.caret);
    });
  };
  const onKeyDown = (e: React.KeyboardEvent) => {
    if (!open) return;
    if (e.key === "ArrowDown") {
      e.preventDefault();
      setActive((a) => (a + 1) % matches.length);
    } else if (e.key === "ArrowUp") {
      e.preventDefault();
      setActive((a) => (a - 1 + matches.length) % matches.length);
    } else if (e.key === "Enter" || e.key === "Tab") {
      e.preventDefault();
      choose(matches[active]);
    } else if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      setPartial(null);
    }
  };
  const common = {
    id,
    ref,
    value,
    placeholder,
    "aria-label": ariaLabel,
    "data-testid": testId,
    "aria-invalid": invalid || undefined,
    "aria-describedby": describedBy,
    role: "combobox",
    "aria-autocomplete": "list" as const,
    "aria-expanded": open,
    "aria-controls": listId,
    "aria-activedescendant": open ? `${listId}-${active}` : undefined,
    onKeyDown,
    onBlur: () => setTimeout(() => setPartial(null), 150),
    onChange: (e: React.ChangeEvent<HTMLInputElement | HTMLTextAreaElement>) =>
      update(e.target.value, e.target.selectionStart ?? e.target.value.length),
  };
  return (
    <div className="template-input">
      {multiline ? <textarea rows={3} {...common} /> : <input type="text" {...common} />}
      {open && (
        <ul className="suggestions" role="listbox" id={listId} data-testid={`refs-${testId}`}>
          {matches.map((s, i) => (
            <li
              key={s}
              id={`${listId}-${i}`}
              role="option"
              aria-selected={i === active}
              className={i === active ? "active" : ""}
              data-testid={`ref-option-${s}`}
              onMouseDown={(e) => {
                e.preventDefault();
                choose(s);
              }}
            >
              {`{{${s}}}`}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
