/**
 * The condition builder (switch/if/loop `when`, data filters): one row per condition, the left
 * operand picked from the references upstream (or typed), an operator, the right value. The
 * operator help is shown once for the whole list, not under every row.
 */
import { formatValue, parseValue } from "../keyValue";
import type { FieldDesc } from "../schema";
import { TemplateInput } from "../TemplateInput";

const NO_VALUE = new Set(["empty", "not_empty"]);
const OP_LABELS: Record<string, string> = {
  "==": "equals",
  "!=": "does not equal",
  contains: "contains",
  not_contains: "does not contain",
  starts_with: "starts with",
  ends_with: "ends with",
  empty: "is empty",
  not_empty: "is not empty",
  ">": ">",
  "<": "<",
  ">=": "≥",
  "<=": "≤",
};

interface Props {
  f: FieldDesc;
  id: string;
  path: string;
  idPrefix: string;
  value: unknown;
  onChange: (v: unknown) => void;
  problems: Record<string, string[]>;
  suggestions: string[];
  title: string;
  help: React.ReactNode;
  errorEl: React.ReactNode;
  invalid: boolean;
  clearable: boolean;
}

function safeId(s: string): string {
  return s.replace(/[^A-Za-z0-9_\-.]/g, "_");
}

export function ConditionList({ f, id, path, idPrefix, value, onChange, problems, suggestions, title, help, errorEl, invalid, clearable }: Props) {
  const items: Record<string, any>[] = Array.isArray(value) ? value : [];
  const fields = f.item?.fields ?? [];
  const leftKey = fields.some((c) => c.key === "ref") ? "ref" : "key";
  const left = fields.find((c) => c.key === leftKey);
  const op = fields.find((c) => c.key === "op");
  const ops: string[] = (op?.enumValues as string[]) ?? Object.keys(OP_LABELS);
  const listId = `${id}-refs`;
  const set = (i: number, k: string, v: unknown) =>
    onChange(
      items.map((it, j) => {
        if (j !== i) return it;
        const next = { ...it };
        if (v === undefined) delete next[k];
        else next[k] = v;
        return next;
      }),
    );
  const remove = (i: number) => {
    const next = items.filter((_, j) => j !== i);
    onChange(next.length || f.required ? next : undefined);
  };
  return (
    <fieldset className={`field field-array conditions${invalid ? " invalid" : ""}`} data-testid={id}>
      <legend>
        {title}
        {f.required && <span aria-hidden="true"> *</span>}
      </legend>
      {help}
      {op?.description && (
        <details className="op-help" data-testid={`${id}-op-help`}>
          <summary>About the operators</summary>
          <small className="help">{op.description}</small>
        </details>
      )}
      {errorEl}
      {leftKey === "ref" && (
        <datalist id={listId}>
          {suggestions.map((s) => (
            <option key={s} value={s} />
          ))}
        </datalist>
      )}
      {items.map((item, i) => {
        const base = `${idPrefix}-${safeId(`${path}.${i}`)}`;
        const rowErrors = Object.entries(problems)
          .filter(([p]) => p === `${path}.${i}` || p.startsWith(`${path}.${i}.`))
          .flatMap(([, m]) => m);
        const opValue = item.op ?? op?.default ?? "==";
        return (
          <div className="condition-row" key={i} data-testid={`${id}-condition-${i}`} role="group" aria-label={`Condition ${i + 1}`}>
            <span className="condition-n muted">{i + 1}.</span>
            <input
              type="text"
              id={`${base}.${leftKey}`}
              data-testid={`${base}.${leftKey}`}
              aria-label={`Condition ${i + 1}: ${left?.label ?? "reference"}`}
              list={leftKey === "ref" ? listId : undefined}
              autoComplete="off"
              placeholder={leftKey === "ref" ? "reference, e.g. classify.label" : "field of each item, e.g. score"}
              value={item[leftKey] ?? ""}
              aria-invalid={Boolean(problems[`${path}.${i}.${leftKey}`]) || undefined}
              onChange={(e) => set(i, leftKey, e.target.value === "" && leftKey === "key" ? undefined : e.target.value)}
            />
            <select
              id={`${base}.op`}
              data-testid={`${base}.op`}
              aria-label={`Condition ${i + 1}: operator`}
              value={opValue}
              onChange={(e) => set(i, "op", e.target.value)}
            >
              {ops.map((o) => (
                <option key={o} value={o}>
                  {OP_LABELS[o] ?? o}
                </option>
              ))}
            </select>
            {NO_VALUE.has(opValue) ? (
              <span className="muted condition-novalue">(no value)</span>
            ) : (
              <TemplateInput
                id={`${base}.value`}
                testId={`${base}.value`}
                ariaLabel={`Condition ${i + 1}: value`}
                value={formatValue(item.value, "loose")}
                suggestions={suggestions}
                placeholder="value or {{reference}}"
                onChange={(t) => set(i, "value", t === "" ? undefined : parseValue(t, "loose"))}
              />
            )}
            <button type="button" className="small" aria-label={`Remove condition ${i + 1}`} data-testid={`${id}-remove-${i}`} onClick={() => remove(i)}>
              ✕
            </button>
            {rowErrors.length > 0 && (
              <div className="field-error condition-error" role="alert" data-testid={`${base}-error`}>
                {rowErrors.join("; ")}
              </div>
            )}
          </div>
        );
      })}
      <div className="array-actions">
        <button type="button" className="small" data-testid={`${id}-add`} onClick={() => onChange([...items, { [leftKey]: "", op: op?.default ?? "==" }])}>
          + Add condition
        </button>
        {clearable && items.length > 0 && (
          <button type="button" className="small link" data-testid={`${id}-clear`} onClick={() => onChange(undefined)}>
            Remove all
          </button>
        )}
      </div>
    </fieldset>
  );
}
