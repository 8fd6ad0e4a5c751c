/** Renders field descriptors (forms/schema.ts) as labelled inputs; the value is a plain object. */
import { memo, useState } from "react";
import { TemplateInput } from "./TemplateInput";
import { formatLoose, initialValue, parseLoose, setPath, type FieldDesc } from "./schema";

export interface SchemaFormProps {
  fields: FieldDesc[];
  value: Record<string, any>;
  onChange: (v: Record<string, any>) => void;
  /** form path -> messages (from the validator) */
  problems?: Record<string, string[]>;
  suggestions?: string[];
  /** prefix of ids/testids, e.g. "field" -> data-testid="field-text" */
  idPrefix?: string;
  templates?: boolean;
  /** field path (array indices left out, e.g. "tools" for "tools.2") -> values to pick from; the
   * field stays free text */
  choices?: Record<string, FieldChoices>;
}

export interface FieldChoices {
  refs: string[];
  labels?: Record<string, string>;
}

export function SchemaForm({ fields, value, onChange, problems = {}, suggestions = [], idPrefix = "field", templates = true, choices }: SchemaFormProps) {
  if (!fields.length) return <p className="muted">No settings.</p>;
  return (
    <div className="schema-form">
      {fields.map((f) => (
        <Field
          key={f.key}
          f={f}
          path={f.key}
          value={value?.[f.key]}
          onChange={(v) => onChange(setPath(value ?? {}, f.key, v))}
          problems={problems}
          suggestions={suggestions}
          idPrefix={idPrefix}
          templates={templates}
          choices={choices}
        />
      ))}
    </div>
  );
}

interface FieldProps {
  f: FieldDesc;
  path: string;
  value: any;
  onChange: (v: any) => void;
  problems: Record<string, string[]>;
  suggestions: string[];
  idPrefix: string;
  templates: boolean;
  choices?: Record<string, FieldChoices>;
  label?: string;
}

function safeId(s: string): string {
  return s.replace(/[^A-Za-z0-9_\-.]/g, "_");
}

const Field = memo(function Field({ f, path, value, onChange, problems, suggestions, idPrefix, templates, choices, label }: FieldProps) {
  const id = `${idPrefix}-${safeId(path)}`;
  const errs = problems[path] ?? [];
  const errId = errs.length ? `${id}-error` : undefined;
  const helpId = f.description ? `${id}-help` : undefined;
  const describedBy = [errId, helpId].filter(Boolean).join(" ") || undefined;
  const title = label ?? f.label;
  const labelEl = (
    <label htmlFor={id}>
      {title}
      {f.required && <span aria-hidden="true"> *</span>}
    </label>
  );
  const help = f.description ? (
    <small id={helpId} className="help">
      {f.description}
    </small>
  ) : null;
  const errorEl = errs.length ? (
    <div id={errId} className="field-error" role="alert" data-testid={`${id}-error`}>
      {errs.join("; ")}
    </div>
  ) : null;
  const invalid = errs.length > 0;

  let control: React.ReactNode;
  switch (f.kind) {
    case "boolean":
      return (
        <div className={`field field-bool${invalid ? " invalid" : ""}`}>
          <label htmlFor={id}>
            <input
              id={id}
              type="checkbox"
              data-testid={id}
              checked={Boolean(value ?? f.default)}
              aria-describedby={describedBy}
              onChange={(e) => onChange(e.target.checked)}
            />{" "}
            {title}
          </label>
          {help}
          {errorEl}
        </div>
      );
    case "enum":
      control = (
        <select
          id={id}
          data-testid={id}
          value={value === undefined || value === null ? "" : JSON.stringify(value)}
          aria-invalid={invalid || undefined}
          aria-describedby={describedBy}
          onChange={(e) => onChange(e.target.value === "" ? undefined : JSON.parse(e.target.value))}
        >
          {(!f.required || value === undefined) && <option value="">—</option>}
          {(f.enumValues ?? []).map((v) => (
            <option key={JSON.stringify(v)} value={JSON.stringify(v)}>
              {String(v)}
            </option>
          ))}
        </select>
      );
      break;
    case "number":
    case "integer":
      control = <NumberInput id={id} f={f} value={value} onChange={onChange} invalid={invalid} describedBy={describedBy} />;
      break;
    case "secret":
      control = <SecretInput id={id} value={value ?? ""} onChange={onChange} invalid={invalid} describedBy={describedBy} />;
      break;
    case "string":
    case "text": {
      const options = choices?.[path.replace(/\.\d+(?=\.|$)/g, "")];
      control = options ? (
        <>
          <input
            id={id}
            data-testid={id}
            type="text"
            list={`${id}-choices`}
            autoComplete="off"
            value={value ?? ""}
            aria-invalid={invalid || undefined}
            aria-describedby={describedBy}
            onChange={(e) => onChange(e.target.value === "" && !f.required ? undefined : e.target.value)}
          />
          <datalist id={`${id}-choices`} data-testid={`${id}-choices`}>
            {options.refs.map((ref) => (
              <option key={ref} value={ref} label={options.labels?.[ref]} />
            ))}
          </datalist>
        </>
      ) : templates && f.template ? (
          <TemplateInput
            id={id}
            testId={id}
            value={typeof value === "string" ? value : formatLoose(value)}
            onChange={(v) => onChange(v === "" && !f.required ? undefined : v)}
            suggestions={suggestions}
            multiline={f.kind === "text"}
            invalid={invalid}
            describedBy={describedBy}
          />
        ) : f.kind === "text" ? (
          <textarea id={id} data-testid={id} rows={3} value={value ?? ""} aria-invalid={invalid || undefined} aria-describedby={describedBy} onChange={(e) => onChange(e.target.value)} />
        ) : (
          <input id={id} data-testid={id} type="text" value={value ?? ""} aria-invalid={invalid || undefined} aria-describedby={describedBy} onChange={(e) => onChange(e.target.value === "" && !f.required ? undefined : e.target.value)} />
        );
      break;
    }
    case "array": {
      const items: any[] = Array.isArray(value) ? value : [];
      return (
        <fieldset className={`field field-array${invalid ? " invalid" : ""}`} data-testid={id}>
          <legend>
            {title}
            {f.required && <span aria-hidden="true"> *</span>}
          </legend>
          {help}
          {errorEl}
          {items.map((item, i) => (
            <div className="array-item" key={i}>
              <Field
                f={f.item!}
                path={`${path}.${i}`}
                value={item}
                label={`${f.item!.kind === "object" ? "Item" : title} ${i + 1}`}
                onChange={(v) => {
                  const next = [...items];
                  next[i] = v;
                  onChange(next);
                }}
                problems={problems}
                suggestions={suggestions}
                idPrefix={idPrefix}
                templates={templates}
                choices={choices}
              />
              <button
                type="button"
                className="small"
                aria-label={`Remove ${title} ${i + 1}`}
                data-testid={`${id}-remove-${i}`}
                onClick={() => onChange(items.filter((_, j) => j !== i))}
              >
                ✕
              </button>
            </div>
          ))}
          <button type="button" className="small" data-testid={`${id}-add`} onClick={() => onChange([...items, initialValue(f.item!)])}>
            + Add {f.item!.kind === "object" ? "item" : title.toLowerCase()}
          </button>
        </fieldset>
      );
    }
    case "object": {
      const obj = value && typeof value === "object" ? value : {};
      return (
        <fieldset className={`field field-object${invalid ? " invalid" : ""}`} data-testid={id}>
          <legend>{title}</legend>
          {help}
          {errorEl}
          {(f.fields ?? []).map((c) => (
            <Field
              key={c.key}
              f={c}
              path={`${path}.${c.key}`}
              value={obj[c.key]}
              onChange={(v) => onChange(setPath(obj, c.key, v))}
              problems={problems}
              suggestions={suggestions}
              idPrefix={idPrefix}
              templates={templates}
              choices={choices}
            />
          ))}
        </fieldset>
      );
    }
    default:
      control = <JsonInput id={id} value={value} onChange={onChange} invalid={invalid} describedBy={describedBy} suggestions={templates ? suggestions : []} />;
  }
  return (
    <div className={`field${invalid ? " invalid" : ""}`}>
      {labelEl}
      {control}
      {help}
      {errorEl}
    </div>
  );
});

function NumberInput({ id, f, value, onChange, invalid, describedBy }: { id: string; f: FieldDesc; value: any; onChange: (v: any) => void; invalid: boolean; describedBy?: string }) {
  // A template (`{{inputs.n}}`) is a valid value of a number field too: keep text that is not a number.
  const text = value === undefined || value === null ? "" : String(value);
  return (
    <input
      id={id}
      data-testid={id}
      type="text"
      inputMode="decimal"
      value={text}
      aria-invalid={invalid || undefined}
      aria-describedby={describedBy}
      onChange={(e) => {
        const t = e.target.value;
        if (t.trim() === "") return onChange(undefined);
        const n = Number(t);
        onChange(Number.isFinite(n) && !/^\s*$/.test(t) && !t.endsWith(".") ? (f.kind === "integer" && Number.isInteger(n) ? n : n) : t);
      }}
    />
  );
}

function SecretInput({ id, value, onChange, invalid, describedBy }: { id: string; value: string; onChange: (v: any) => void; invalid: boolean; describedBy?: string }) {
  const [shown, setShown] = useState(false);
  return (
    <div className="secret">
      <input
        id={id}
        data-testid={id}
        type={shown ? "text" : "password"}
        autoComplete="off"
        value={value}
        aria-invalid={invalid || undefined}
        aria-describedby={describedBy}
        placeholder="{{env.NAME}} or a value"
        onChange={(e) => onChange(e.target.value === "" ? undefined : e.target.value)}
      />
      <button type="button" className="small" aria-pressed={shown} aria-label={shown ? "Hide value" : "Show value"} onClick={() => setShown(!shown)}>
        {shown ? "Hide" : "Show"}
      </button>
    </div>
  );
}

function JsonInput({ id, value, onChange, invalid, describedBy, suggestions }: { id: string; value: any; onChange: (v: any) => void; invalid: boolean; describedBy?: string; suggestions: string[] }) {
  const [text, setText] = useState(() => formatLoose(value));
  const [last, setLast] = useState(value);
  if (last !== value && parseLoose(text) !== value && JSON.stringify(parseLoose(text)) !== JSON.stringify(value)) {
    setLast(value);
    setText(formatLoose(value));
  }
  return (
    <TemplateInput
      id={id}
      testId={id}
      multiline
      value={text}
      suggestions={suggestions}
      invalid={invalid}
      describedBy={describedBy}
      placeholder="JSON or a {{reference}}"
      onChange={(t) => {
        setText(t);
        const v = parseLoose(t);
        setLast(v);
        onChange(v);
      }}
    />
  );
}
