/** The human task page at /tasks/<token>: no API key, the token is the credential. */
import { useEffect, useState } from "react";
import { api, ApiError } from "../api";
import type { HumanField, HumanTask } from "../types";
import { errorText } from "../ui/format";

function initial(task: HumanTask): Record<string, any> {
  const v: Record<string, any> = {};
  for (const f of task.fields ?? []) {
    const p = task.prefill?.[f.name];
    v[f.name] = p !== undefined && p !== null ? p : f.type === "boolean" ? false : "";
  }
  return v;
}

/** Field values as the server expects them: numbers as numbers, empty optional fields left out. */
export function taskValues(fields: HumanField[], values: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = {};
  for (const f of fields) {
    let v = values[f.name];
    if (v === "" || v === undefined) continue;
    if ((f.type === "number" || f.type === "integer") && typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) v = Number(v);
    out[f.name] = v;
  }
  return out;
}

export function TaskPage({ token }: { token: string }) {
  const [task, setTask] = useState<HumanTask | null>(null);
  const [values, setValues] = useState<Record<string, any>>({});
  const [error, setError] = useState<string | null>(null);
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [outcome, setOutcome] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    api.getTask(token).then(
      (t) => {
        setTask(t);
        setValues(initial(t));
      },
      (e) => setError(e instanceof ApiError && e.status === 404 ? "This task does not exist (the link may be wrong)." : errorText(e)),
    );
  }, [token]);

  const submit = async (action: string | undefined) => {
    if (!task) return;
    setBusy(true);
    setError(null);
    setFieldErrors({});
    try {
      const out = await api.submitTask(token, action, taskValues(task.fields ?? [], values));
      setTask(out);
      setOutcome(`Submitted${action ? `: ${action}` : ""}. The run continues.`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 422) {
        const fe: Record<string, string> = {};
        for (const p of e.problems) {
          const name = (p.field ?? p.message.split(":")[0] ?? "").replace(/^values\./, "");
          fe[name] = p.message;
        }
        setFieldErrors(fe);
        setError(errorText(e));
      } else if (e instanceof ApiError && e.status === 409) setError("This task was already answered, or its run was cancelled.");
      else if (e instanceof ApiError && e.status === 410) setError("This task has expired.");
      else setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="task-page" data-testid="task-page">
      <header className="app-header">
        <span className="brand">plait</span>
      </header>
      <main className="page narrow">
        <h1>Your input is needed</h1>
        {!task && !error && <p className="loading">Loading…</p>}
        {task && (
          <>
            <p className="task-message" data-testid="task-message">
              {task.message}
            </p>
            <p className="muted small-text">
              Run <code>{task.run_id.slice(0, 12)}</code>, step <code>{task.node_id}</code> · status <span data-testid="task-status">{task.status}</span>
            </p>
            {task.status === "pending" && !outcome ? (
              <form
                data-testid="task-form"
                onSubmit={(e) => {
                  e.preventDefault();
                  void submit(task.actions?.[0]);
                }}
              >
                {(task.fields ?? []).map((f) => (
                  <TaskField key={f.name} f={f} value={values[f.name]} error={fieldErrors[f.name]} onChange={(v) => setValues((s) => ({ ...s, [f.name]: v }))} />
                ))}
                <div className="buttons">
                  {(task.actions?.length ? task.actions : [undefined]).map((a, i) => (
                    <button
                      key={a ?? "submit"}
                      type="button"
                      className={i === 0 ? "primary" : ""}
                      disabled={busy}
                      data-testid={`task-action-${a ?? "submit"}`}
                      onClick={() => submit(a)}
                    >
                      {a ?? "Submit"}
                    </button>
                  ))}
                </div>
              </form>
            ) : (
              <div className="notice" role="status" data-testid="task-outcome">
                {outcome ??
                  (task.status === "submitted"
                    ? `Already answered${task.result?.action ? `: ${task.result.action}` : ""}.`
                    : task.status === "expired"
                      ? "This task has expired."
                      : `This task is ${task.status}.`)}
              </div>
            )}
          </>
        )}
        {error && (
          <p className="error" role="alert" data-testid="task-error">
            {error}
          </p>
        )}
      </main>
    </div>
  );
}

function TaskField({ f, value, error, onChange }: { f: HumanField; value: any; error?: string; onChange: (v: any) => void }) {
  const id = `task-field-${f.name}`;
  const label = (
    <label htmlFor={id}>
      {f.label || f.name}
      {f.required !== false && <span aria-hidden="true"> *</span>}
    </label>
  );
  const common = { id, "data-testid": id, "aria-invalid": error ? true : undefined, "aria-describedby": error ? `${id}-error` : undefined, required: f.required !== false && f.type !== "boolean" };
  let control: React.ReactNode;
  if (f.type === "boolean")
    return (
      <div className="field field-bool">
        <label htmlFor={id}>
          <input type="checkbox" {...common} checked={Boolean(value)} onChange={(e) => onChange(e.target.checked)} /> {f.label || f.name}
        </label>
        {error && <div className="field-error" id={`${id}-error`}>{error}</div>}
      </div>
    );
  if (f.type === "select")
    control = (
      <select {...common} value={value ?? ""} onChange={(e) => onChange(e.target.value)}>
        <option value="">—</option>
        {(f.options ?? []).map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    );
  else if (f.type === "text") control = <textarea rows={4} {...common} value={value ?? ""} onChange={(e) => onChange(e.target.value)} />;
  else control = <input type={f.type === "number" || f.type === "integer" ? "number" : "text"} step={f.type === "integer" ? 1 : "any"} {...common} value={value ?? ""} onChange={(e) => onChange(e.target.value)} />;
  return (
    <div className={`field${error ? " invalid" : ""}`}>
      {label}
      {control}
      {error && (
        <div className="field-error" id={`${id}-error`} role="alert">
          {error}
        </div>
      )}
    </div>
  );
}
