/** Asks for the flow's declared inputs (a form from its input schema) before a run, filled with
 * the inputs of the flow's last run from this dialog (kept in the browser per flow). */
import { useMemo, useState } from "react";
import { SchemaForm } from "../forms/SchemaForm";
import { describeSchema, initialValue, missingRequired } from "../forms/schema";
import type { JsonSchema, Problem } from "../types";
import { Dialog } from "../ui/Dialog";
import { loadLastInputs, rememberedFor, saveLastInputs } from "../run/storage";

export function hasInputs(schema: JsonSchema | undefined): boolean {
  return Boolean(schema && schema.properties && Object.keys(schema.properties).length);
}

export function RunDialog({
  schema,
  onRun,
  onClose,
  serverProblems,
  flowId,
}: {
  schema: JsonSchema;
  onRun: (inputs: Record<string, any>) => void;
  onClose: () => void;
  serverProblems: Problem[];
  /** remembers the inputs per flow (none: nothing is remembered) */
  flowId?: string;
}) {
  const fields = useMemo(() => describeSchema(schema), [schema]);
  const [value, setValue] = useState<Record<string, any>>(() => {
    const v: Record<string, any> = {};
    for (const f of fields) {
      const init = initialValue(f);
      if (init !== undefined) v[f.key] = init;
    }
    return flowId ? { ...v, ...rememberedFor(schema.properties as Record<string, any>, loadLastInputs(flowId)) } : v;
  });
  const [tried, setTried] = useState(false);
  const missing = missingRequired(fields, value);
  const problems: Record<string, string[]> = {};
  if (tried) for (const m of missing) problems[m] = ["required"];
  for (const p of serverProblems) {
    const path = (p.field ?? "").replace(/^inputs\.?/, "");
    (problems[path || "_"] ??= []).push(p.message);
  }
  return (
    <Dialog title="Run inputs" onClose={onClose} testId="run-dialog">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setTried(true);
          if (missing.length) return;
          if (flowId) saveLastInputs(flowId, value);
          onRun(value);
        }}
      >
        <SchemaForm fields={fields} value={value} onChange={setValue} problems={problems} idPrefix="input" templates={false} />
        {problems._ && (
          <p className="error" role="alert">
            {problems._.join("; ")}
          </p>
        )}
        <div className="buttons">
          <button type="submit" className="primary" data-testid="run-start">
            Run
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}
