/**
 * The run inputs of a flow as a list of fields (name, type, required, default, description)
 * that writes the flow's input JSON Schema; the schema itself stays editable under "Advanced".
 * Shown in the flow settings and when the start node is selected.
 */
import { useState } from "react";
import "./forms.css";
import { fieldsToSchema, formatDefault, INPUT_TYPES, NAME_PATTERN, parseDefault, schemaToFields, type InputField, type InputsModel, type InputType } from "./inputsSchema";
import type { JsonSchema } from "../types";

interface Props {
  schema: JsonSchema | undefined;
  onChange: (schema: JsonSchema | undefined) => void;
  readOnly?: boolean;
  /** test ids: `${idPrefix}-name-0`... */
  idPrefix?: string;
}

interface Row extends InputField {
  defaultText: string;
  optionsText: string;
}

function rowsOf(schema: JsonSchema | undefined): { rows: Row[]; rootExtra?: JsonSchema } {
  const m = schemaToFields(schema);
  return {
    rows: m.fields.map((f) => ({ ...f, defaultText: formatDefault(f.type, f.default), optionsText: (f.options ?? []).join(", ") })),
    rootExtra: m.rootExtra,
  };
}

function modelOf(rows: Row[], rootExtra?: JsonSchema): InputsModel {
  return { fields: rows.map(({ defaultText: _d, optionsText: _o, ...f }) => f), rootExtra };
}

const key = (s: unknown) => JSON.stringify(s ?? null);
const pretty = (s: JsonSchema | undefined) => (s ? JSON.stringify(s, null, 2) : "");

export function InputsBuilder({ schema, onChange, readOnly, idPrefix = "inputs" }: Props) {
  const [state, setState] = useState(() => rowsOf(schema));
  const [rawText, setRawText] = useState(() => pretty(schema));
  const [rawError, setRawError] = useState<string | null>(null);
  // the schema this form last showed or wrote: another value came from outside (undo, another
  // tab), so both views take it (compared as written, never by re-deriving it from the rows)
  const [seen, setSeen] = useState(() => key(schema));
  if (seen !== key(schema)) {
    setSeen(key(schema));
    setState(rowsOf(schema));
    setRawText(pretty(schema));
    setRawError(null);
  }

  const write = (rows: Row[]) => {
    setState({ rows, rootExtra: state.rootExtra });
    const next = fieldsToSchema(modelOf(rows, state.rootExtra));
    setRawError(null);
    setRawText(pretty(next));
    setSeen(key(next));
    onChange(next);
  };
  const writeRaw = (v: JsonSchema | undefined) => {
    setState(rowsOf(v));
    setSeen(key(v));
    onChange(v);
  };
  const set = (i: number, patch: Partial<Row>) => write(state.rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const names = state.rows.map((r) => r.name.trim());
  const p = idPrefix;
  return (
    <div className="inputs-builder" data-testid={`${p}-builder`}>
      {state.rows.length === 0 && <p className="muted small-text">This flow takes no inputs. Add a field to ask for one when a run starts.</p>}
      {state.rows.map((r, i) => {
        const badName = r.name.trim() !== "" && !NAME_PATTERN.test(r.name.trim());
        const dup = r.name.trim() !== "" && names.indexOf(r.name.trim()) !== i;
        return (
          <div className="input-field" key={i} role="group" aria-label={`Input ${r.name || i + 1}`} data-testid={`${p}-field-${i}`}>
            <div className="row">
              <input
                aria-label={`Input ${i + 1} name`}
                data-testid={`${p}-name-${i}`}
                placeholder="name, e.g. query"
                value={r.name}
                disabled={readOnly}
                aria-invalid={badName || dup || undefined}
                onChange={(e) => set(i, { name: e.target.value })}
              />
              <select
                aria-label={`Input ${i + 1} type`}
                data-testid={`${p}-type-${i}`}
                value={r.type}
                disabled={readOnly || r.type === "other"}
                onChange={(e) => {
                  const type = e.target.value as InputType;
                  set(i, { type, default: parseDefault(type, r.defaultText), options: type === "choice" ? r.optionsText.split(",").map((s) => s.trim()).filter(Boolean) : undefined });
                }}
              >
                {r.type === "other" && <option value="other">(see Advanced)</option>}
                {INPUT_TYPES.map((t) => (
                  <option key={t.value} value={t.value}>
                    {t.label}
                  </option>
                ))}
              </select>
              <label className="required-toggle">
                <input type="checkbox" data-testid={`${p}-required-${i}`} checked={r.required} disabled={readOnly} onChange={(e) => set(i, { required: e.target.checked })} />
                required
              </label>
              {!readOnly && (
                <button type="button" className="small" aria-label={`Remove input ${r.name || i + 1}`} data-testid={`${p}-remove-${i}`} onClick={() => write(state.rows.filter((_, j) => j !== i))}>
                  ✕
                </button>
              )}
            </div>
            {(badName || dup) && (
              <div className="field-error" role="alert">
                {dup ? "Two inputs have this name; only the first counts." : "A name starts with a letter or _, then letters, digits or _."}
              </div>
            )}
            <div className="row2">
              {r.type === "boolean" ? (
                <select aria-label={`Input ${i + 1} default`} data-testid={`${p}-default-${i}`} value={r.defaultText} disabled={readOnly} onChange={(e) => set(i, { defaultText: e.target.value, default: parseDefault("boolean", e.target.value) })}>
                  <option value="">no default</option>
                  <option value="true">yes</option>
                  <option value="false">no</option>
                </select>
              ) : (
                <input
                  aria-label={`Input ${i + 1} default`}
                  data-testid={`${p}-default-${i}`}
                  placeholder={r.type === "list" ? "default: a, b, c" : "default (optional)"}
                  value={r.defaultText}
                  disabled={readOnly}
                  onChange={(e) => set(i, { defaultText: e.target.value, default: parseDefault(r.type, e.target.value) })}
                />
              )}
              <input
                aria-label={`Input ${i + 1} description`}
                data-testid={`${p}-description-${i}`}
                placeholder="description shown in the run form"
                value={r.description ?? ""}
                disabled={readOnly}
                onChange={(e) => set(i, { description: e.target.value || undefined })}
              />
            </div>
            {r.type === "choice" && (
              <input
                aria-label={`Input ${i + 1} choices`}
                data-testid={`${p}-options-${i}`}
                placeholder="choices, separated by commas"
                value={r.optionsText}
                disabled={readOnly}
                onChange={(e) => set(i, { optionsText: e.target.value, options: e.target.value.split(",").map((s) => s.trim()).filter(Boolean) })}
              />
            )}
          </div>
        );
      })}
      {!readOnly && (
        <button
          type="button"
          className="small"
          data-testid={`${p}-add`}
          onClick={() => setState({ ...state, rows: [...state.rows, { name: "", type: "string", required: true, defaultText: "", optionsText: "" }] })}
        >
          + Add input
        </button>
      )}
      <details className="inputs-advanced" data-testid={`${p}-advanced`}>
        <summary>Advanced: the inputs as JSON Schema</summary>
        <textarea
          id={`${p}-schema`}
          rows={6}
          data-testid={`${p}-schema`}
          aria-label="Inputs as JSON Schema"
          value={rawText}
          disabled={readOnly}
          aria-invalid={rawError ? true : undefined}
          placeholder='{"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}'
          onChange={(e) => {
            setRawText(e.target.value);
            if (!e.target.value.trim()) {
              setRawError(null);
              return writeRaw(undefined);
            }
            try {
              const v = JSON.parse(e.target.value);
              setRawError(null);
              writeRaw(v);
            } catch (err) {
              setRawError(`Not JSON yet: ${(err as Error).message}`);
            }
          }}
        />
        {rawError && <div className="field-error">{rawError}</div>}
      </details>
    </div>
  );
}
