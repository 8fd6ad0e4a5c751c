/**
 * Renders field descriptors (forms/schema.ts) as labelled inputs; the value is a plain object.
 * Each kind of field gets a control people can use without writing JSON: rows for mappings, a
 * condition builder, a code editor, durations, provider and model dropdowns. Every optional
 * field can go back to unset (an emptied list or mapping removes its key).
 */
import { memo, useMemo, useState } from "react";
import "./forms.css";
import { itemLabel, singular } from "./labels";
import { isModelFields, usesScript } from "./modelConfig";
import { TemplateInput } from "./TemplateInput";
import { formatLoose, initialValue, parseLoose, setPath, type FieldDesc } from "./schema";
import { CodeEditor, jsonProblem } from "./widgets/CodeEditor";
import { ConditionList } from "./widgets/ConditionList";
import { DurationInput } from "./widgets/DurationInput";
import { KeyValueEditor } from "./widgets/KeyValueEditor";
import { ModelFields } from "./widgets/ModelFields";

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

interface Ctx {
  problems: Record<string, string[]>;
  suggestions: string[];
  idPrefix: string;
  templates: boolean;
  choices?: Record<string, FieldChoices>;
}

export function SchemaForm({ fields, value, onChange, problems = {}, suggestions = [], idPrefix = "field", templates = true, choices }: SchemaFormProps) {
  const ctx = useMemo<Ctx>(() => ({ problems, suggestions, idPrefix, templates, choices }), [problems, suggestions, idPrefix, templates, choices]);
  if (!fields.length) return <p className="muted">No settings.</p>;
  return (
    <div className="schema-form">
      <FieldList fields={fields} value={value ?? {}} onChange={onChange} prefix="" ctx={ctx} hideHelp={false} />
    </div>
  );
}

function safeId(s: string): string {
  return s.replace(/[^A-Za-z0-9_\-.]/g, "_");
}

function join(prefix: string, key: string): string {
  return prefix ? `${prefix}.${key}` : key;
}

interface FieldListProps {
  fields: FieldDesc[];
  value: Record<string, any>;
  onChange: (v: Record<string, any>) => void;
  prefix: string;
  ctx: Ctx;
  hideHelp: boolean;
}

/** The fields of one object; a model config's provider/model/script are handled together. */
function FieldList({ fields, value, onChange, prefix, ctx, hideHelp }: FieldListProps) {
  const obj = value ?? {};
  const model = isModelFields(fields.map((f) => f.key));
  const providerField = fields.find((f) => f.key === "provider");
  const provider: string | undefined = obj.provider ?? providerField?.default;
  return (
    <>
      {fields.map((f) => {
        const path = join(prefix, f.key);
        if (model && f.key === "provider")
          return (
            <ModelFields
              key="model-fields"
              idBase={`${ctx.idPrefix}-${prefix ? `${safeId(prefix)}.` : ""}`}
              value={obj}
              defaultProvider={providerField?.default}
              onChange={onChange}
              providerError={ctx.problems[join(prefix, "provider")]}
              modelError={ctx.problems[join(prefix, "model")]}
            />
          );
        if (model && f.key === "model") return null;
        if (model && f.key === "script" && !usesScript(provider)) {
          if (obj.script === undefined) return null; // not used by this provider: not shown
          const id = `${ctx.idPrefix}-${safeId(path)}`;
          return (
            <div className="field field-unused" key={f.key} data-testid={`${id}-unused`}>
              <span>
                {f.label}: {Array.isArray(obj.script) ? obj.script.length : 0} step(s), not used by provider <code>{provider}</code>.
              </span>
              <button type="button" className="small" data-testid={`${id}-remove`} onClick={() => onChange(setPath(obj, "script", undefined))}>
                Remove script
              </button>
            </div>
          );
        }
        return (
          <Field key={f.key} f={f} path={path} value={obj[f.key]} onChange={(v) => onChange(setPath(obj, f.key, v))} ctx={ctx} hideHelp={hideHelp} />
        );
      })}
    </>
  );
}

interface FieldProps {
  f: FieldDesc;
  path: string;
  value: any;
  onChange: (v: any) => void;
  ctx: Ctx;
  label?: string;
  /** help already shown (under the first item of a list) */
  hideHelp: boolean;
}

const Field = memo(function Field({ f, path, value, onChange, ctx, label, hideHelp }: FieldProps) {
  const { problems, suggestions, idPrefix, templates, choices } = ctx;
  const id = `${idPrefix}-${safeId(path)}`;
  const errs = problems[path] ?? [];
  const errId = errs.length ? `${id}-error` : undefined;
  const showHelp = Boolean(f.description) && !hideHelp;
  const helpId = showHelp ? `${id}-help` : undefined;
  const describedBy = [errId, helpId].filter(Boolean).join(" ") || undefined;
  const title = label ?? f.label;
  const clearable = !f.required && value !== undefined;
  const labelEl = (
    <label htmlFor={id} id={`${id}-label`}>
      {title}
      {f.required && <span aria-hidden="true"> *</span>}
    </label>
  );
  const help = showHelp ? (
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
          <label htmlFor={id} id={`${id}-label`}>
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
          {(!f.required || value === undefined) && <option value="">{f.default !== undefined && f.default !== null ? `— (default: ${String(f.default)})` : "—"}</option>}
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
      control =
        f.widget === "duration" ? (
          <DurationInput
            id={id}
            value={value}
            onChange={onChange}
            invalid={invalid}
            describedBy={describedBy}
            placeholder={typeof f.default === "number" ? `default: ${f.default} s` : undefined}
          />
        ) : (
          <NumberInput id={id} f={f} value={value} onChange={onChange} invalid={invalid} describedBy={describedBy} />
        );
      break;
    case "secret":
      control = <SecretInput id={id} value={value ?? ""} onChange={onChange} invalid={invalid} describedBy={describedBy} />;
      break;
    case "string":
    case "text": {
      const options = choices?.[path.replace(/\.\d+(?=\.|$)/g, "")];
      control =
        f.widget === "code" ? (
          <CodeEditor
            id={id}
            testId={id}
            language={f.language ?? "python"}
            value={typeof value === "string" ? value : formatLoose(value)}
            onChange={(v) => onChange(v === "" && !f.required ? undefined : v)}
            invalid={invalid}
            describedBy={describedBy}
          />
        ) : options ? (
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
    case "map":
      control = (
        <KeyValueEditor
          id={id}
          label={title}
          value={value}
          onChange={(v) => onChange(v === undefined && f.required ? {} : v)}
          values={f.mapValues ?? "loose"}
          valueEnum={f.mapEnum}
          suggestions={suggestions}
          templates={templates && f.template}
          describedBy={describedBy}
        />
      );
      break;
    case "array": {
      if (f.widget === "conditions")
        return (
          <ConditionList
            f={f}
            id={id}
            path={path}
            idPrefix={idPrefix}
            value={value}
            onChange={onChange}
            problems={problems}
            suggestions={suggestions}
            title={title}
            help={help}
            errorEl={errorEl}
            invalid={invalid}
            clearable={clearable}
          />
        );
      const items: any[] = Array.isArray(value) ? value : [];
      const one = singular(title);
      const setItems = (next: any[]) => onChange(next.length === 0 && !f.required ? undefined : next);
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
                label={itemLabel(title, i, item)}
                onChange={(v) => {
                  const next = [...items];
                  next[i] = v;
                  onChange(next);
                }}
                ctx={ctx}
                hideHelp={i > 0}
              />
              <button
                type="button"
                className="small"
                aria-label={`Remove ${one.toLowerCase()} ${i + 1}`}
                data-testid={`${id}-remove-${i}`}
                onClick={() => setItems(items.filter((_, j) => j !== i))}
              >
                ✕
              </button>
            </div>
          ))}
          <div className="array-actions">
            <button type="button" className="small" data-testid={`${id}-add`} onClick={() => onChange([...items, initialValue(f.item!)])}>
              + Add {one.toLowerCase()}
            </button>
            {clearable && (
              <button type="button" className="small link" data-testid={`${id}-clear`} onClick={() => onChange(undefined)}>
                {items.length ? "Remove all" : "Unset"}
              </button>
            )}
          </div>
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
          <FieldList fields={f.fields ?? []} value={obj} onChange={onChange} prefix={path} ctx={ctx} hideHelp={hideHelp} />
          {clearable && f.nullable && (
            <button type="button" className="small link" data-testid={`${id}-clear`} onClick={() => onChange(undefined)}>
              Remove {title.toLowerCase()}
            </button>
          )}
        </fieldset>
      );
    }
    default:
      control =
        f.widget === "code" ? (
          <JsonCodeField id={id} value={value} onChange={onChange} invalid={invalid} describedBy={describedBy} allowTemplate={f.template} />
        ) : (
          <JsonInput id={id} value={value} onChange={onChange} invalid={invalid} describedBy={describedBy} suggestions={templates ? suggestions : []} />
        );
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
  const range =
    f.minimum !== undefined && f.maximum !== undefined ? `${f.minimum}–${f.maximum}` : f.minimum !== undefined ? `≥ ${f.minimum}` : f.maximum !== undefined ? `≤ ${f.maximum}` : "";
  const def = f.default !== undefined && f.default !== null ? `default ${f.default}` : "";
  return (
    <input
      id={id}
      data-testid={id}
      type="text"
      inputMode="decimal"
      className="number-input"
      value={text}
      placeholder={[def, range].filter(Boolean).join(", ") || undefined}
      aria-invalid={invalid || undefined}
      aria-describedby={describedBy}
      onChange={(e) => {
        const t = e.target.value;
        if (t.trim() === "") return onChange(undefined);
        const n = Number(t);
        onChange(Number.isFinite(n) && !t.endsWith(".") ? n : t);
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

function sameJson(a: any, b: any): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/** A JSON value (a body, a schema) in the code editor, checked as it is typed. A body may also be
 * a text template; a schema that does not parse is not written until it does. */
function JsonCodeField({ id, value, onChange, invalid, describedBy, allowTemplate }: { id: string; value: any; onChange: (v: any) => void; invalid: boolean; describedBy?: string; allowTemplate: boolean }) {
  const [text, setText] = useState(() => formatLoose(value));
  const [last, setLast] = useState(value);
  if (!sameJson(last, value) && !sameJson(parseLoose(text), value)) {
    setLast(value);
    setText(formatLoose(value));
  }
  const problem = jsonProblem(text, allowTemplate);
  return (
    <>
      <CodeEditor
        id={id}
        testId={id}
        language="json"
        value={text}
        invalid={invalid || Boolean(problem)}
        describedBy={describedBy}
        onChange={(t) => {
          setText(t);
          if (jsonProblem(t, allowTemplate) && !allowTemplate) return; // keep the last valid value
          const v = parseLoose(t);
          setLast(v);
          onChange(v);
        }}
      />
      {problem && (
        <small className={allowTemplate ? "help warn" : "field-error"} data-testid={`${id}-json-problem`}>
          {problem}
          {allowTemplate ? " (it is sent as text)" : " (not saved until it is fixed)"}
        </small>
      )}
    </>
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
