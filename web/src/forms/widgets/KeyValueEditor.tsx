/** A mapping (headers, query parameters, mapping, arguments) as rows of name and value. */
import { useState } from "react";
import { duplicateKeys, objectToRows, rowsToObject, type KvRow, type KvValues } from "../keyValue";
import { singular } from "../labels";
import { TemplateInput } from "../TemplateInput";

interface Props {
  id: string;
  label: string;
  value: unknown;
  onChange: (v: Record<string, unknown> | undefined) => void;
  values: KvValues;
  valueEnum?: unknown[];
  suggestions: string[];
  templates: boolean;
  describedBy?: string;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

export function KeyValueEditor({ id, label, value, onChange, values, valueEnum, suggestions, templates, describedBy }: Props) {
  const obj = value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  const [rows, setRows] = useState<KvRow[]>(() => objectToRows(obj, values));
  const [seen, setSeen] = useState<unknown>(obj);
  // the document changed from outside (undo, a fix): take its rows
  if (!same(seen, obj)) {
    setSeen(obj);
    setRows(objectToRows(obj, values));
  }
  const one = singular(label);
  const dups = duplicateKeys(rows);
  const update = (next: KvRow[]) => {
    const v = rowsToObject(next, values);
    setRows(next);
    setSeen(v);
    onChange(v);
  };
  const set = (i: number, patch: Partial<KvRow>) => update(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <div className="kv-editor" data-testid={`${id}-kv`} aria-describedby={describedBy}>
      {rows.length > 0 && (
        <div className="kv-head muted" aria-hidden="true">
          <span>Name</span>
          <span>Value</span>
        </div>
      )}
      {rows.map((r, i) => (
        <div className="kv-row" key={i} data-testid={`${id}-row-${i}`}>
          <input
            type="text"
            aria-label={`${one} ${i + 1} name`}
            data-testid={`${id}-key-${i}`}
            value={r.key}
            placeholder="name"
            autoComplete="off"
            aria-invalid={dups.has(r.key.trim()) || undefined}
            onChange={(e) => set(i, { key: e.target.value })}
          />
          {valueEnum ? (
            <select aria-label={`${one} ${i + 1} value`} data-testid={`${id}-value-${i}`} value={r.value} onChange={(e) => set(i, { value: e.target.value })}>
              {!valueEnum.map(String).includes(r.value) && <option value={r.value}>{r.value || "—"}</option>}
              {valueEnum.map((v) => (
                <option key={String(v)} value={String(v)}>
                  {String(v)}
                </option>
              ))}
            </select>
          ) : templates ? (
            <TemplateInput id={`${id}-value-${i}`} testId={`${id}-value-${i}`} value={r.value} onChange={(v) => set(i, { value: v })} suggestions={suggestions} placeholder="value or {{reference}}" ariaLabel={`${one} ${i + 1} value`} />
          ) : (
            <input type="text" aria-label={`${one} ${i + 1} value`} data-testid={`${id}-value-${i}`} value={r.value} onChange={(e) => set(i, { value: e.target.value })} />
          )}
          <button type="button" className="small" aria-label={`Remove ${one.toLowerCase()} ${i + 1}`} data-testid={`${id}-remove-${i}`} onClick={() => update(rows.filter((_, j) => j !== i))}>
            ✕
          </button>
          {dups.has(r.key.trim()) && <small className="field-error kv-dup">This name is used twice; only the first counts.</small>}
        </div>
      ))}
      <button type="button" className="small" data-testid={`${id}-add`} onClick={() => setRows([...rows, { key: "", value: valueEnum ? String(valueEnum[0]) : "" }])}>
        + Add {one.toLowerCase()}
      </button>
    </div>
  );
}
