/**
 * Settings → Variables: the values flows read as {{env.NAME}} and the keys model providers use.
 * Plain values are shown and editable; secrets are write-only: the server never sends them back
 * (they read as ********), so editing a secret means typing a new value. Deployment-wide
 * variables (set by an administrator) are listed read-only: a user's own variable of the same name
 * overrides them in the user's runs.
 */
import { useCallback, useEffect, useState } from "react";
import { errorText } from "../ui/format";
import { reloadProviders } from "./providers";
import { SettingsNav } from "./SettingsNav";
import { settingsApi, type Variable } from "./settingsApi";
import "./settings.css";

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

interface Draft {
  name: string;
  value: string;
  isSecret: boolean;
  description: string;
  /** editing an existing variable (its name is fixed) */
  existing: boolean;
  wasSecret: boolean;
}

const blank: Draft = { name: "", value: "", isSecret: false, description: "", existing: false, wasSecret: false };

/** A plain value as the form edits it (strings as they are, other JSON as text). */
export function valueText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

export default function VariablesPage() {
  const [vars, setVars] = useState<Variable[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [draft, setDraft] = useState<Draft | null>(null);
  const [busy, setBusy] = useState(false);

  const load = useCallback(async () => {
    try {
      setVars(await settingsApi.variables());
      setError(null);
    } catch (e) {
      setError(errorText(e));
      setVars([]);
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);

  const save = async () => {
    if (!draft) return;
    const name = draft.name.trim();
    if (!NAME_RE.test(name)) {
      setError("A name is letters, digits and _, starting with a letter or _ (flows read it as {{env.NAME}}).");
      return;
    }
    if (draft.existing && draft.wasSecret && !draft.value) {
      setError("Type the new value: a secret is never shown, so it cannot be edited in place.");
      return;
    }
    setBusy(true);
    try {
      await settingsApi.setVariable(name, draft.value, draft.isSecret, draft.description);
      setDraft(null);
      await load();
      void reloadProviders(); // a key or base URL may configure a model provider
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const remove = async (v: Variable) => {
    setBusy(true);
    try {
      await settingsApi.deleteVariable(v.name);
      await load();
      void reloadProviders();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="page settings-page" data-testid="variables-page">
      <SettingsNav current="variables" />
      <div className="page-head">
        <h1>Variables</h1>
        <div className="buttons">
          <button type="button" className="primary" data-testid="add-variable" onClick={() => setDraft({ ...blank })}>
            Add variable
          </button>
        </div>
      </div>
      <p className="muted">
        Flows read these as <code>{"{{env.NAME}}"}</code>; model providers read their keys and base URLs here. Secrets are write-only: once saved they are never shown
        again.
      </p>
      {error && (
        <p className="error" role="alert" data-testid="variables-error">
          {error}
        </p>
      )}
      {draft && (
        <form
          className="variable-form"
          data-testid="variable-form"
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          <div>
            <label htmlFor="var-name">Name</label>
            <input id="var-name" data-testid="variable-name" value={draft.name} disabled={draft.existing} autoFocus={!draft.existing} onChange={(e) => setDraft({ ...draft, name: e.target.value })} />
          </div>
          <div>
            <label htmlFor="var-value">Value</label>
            <input
              id="var-value"
              data-testid="variable-value"
              type={draft.isSecret ? "password" : "text"}
              autoComplete="off"
              placeholder={draft.existing && draft.wasSecret ? "•••••••• type a new value to replace it" : ""}
              value={draft.value}
              autoFocus={draft.existing}
              onChange={(e) => setDraft({ ...draft, value: e.target.value })}
            />
          </div>
          <label className="check wide">
            <input type="checkbox" data-testid="variable-secret" checked={draft.isSecret} onChange={(e) => setDraft({ ...draft, isSecret: e.target.checked })} /> Secret (write-only,
            masked in run logs)
          </label>
          <div className="wide">
            <label htmlFor="var-description">Description (optional)</label>
            <input id="var-description" data-testid="variable-description" value={draft.description} onChange={(e) => setDraft({ ...draft, description: e.target.value })} />
          </div>
          <div className="buttons wide">
            <button type="submit" className="primary" data-testid="variable-save" disabled={busy}>
              Save
            </button>
            <button type="button" onClick={() => setDraft(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {vars === null ? (
        <p className="loading">Loading…</p>
      ) : vars.length === 0 ? (
        <p className="muted" data-testid="variables-empty">
          No variables yet.
        </p>
      ) : (
        <table className="flow-table" data-testid="variables-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Value</th>
              <th scope="col">Description</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {vars.map((v) => (
              <tr key={`${v.scope}:${v.name}`} data-testid={`variable-row-${v.scope === "user" ? "" : "global-"}${v.name}`}>
                <td>
                  <code>{v.name}</code> {v.scope === "global" && <span className="scope-badge">deployment</span>}
                </td>
                <td data-testid={`variable-value-${v.name}`}>
                  {v.is_secret ? <span className="secret-value" title="secret: write-only">••••••••</span> : <code>{valueText(v.value)}</code>}
                </td>
                <td className="muted">{v.description}</td>
                <td className="row-actions">
                  {v.scope === "user" && (
                    <>
                      <button
                        type="button"
                        className="small"
                        data-testid={`variable-edit-${v.name}`}
                        onClick={() =>
                          setDraft({
                            name: v.name,
                            value: v.is_secret ? "" : valueText(v.value),
                            isSecret: v.is_secret,
                            description: v.description ?? "",
                            existing: true,
                            wasSecret: v.is_secret,
                          })
                        }
                      >
                        Edit
                      </button>{" "}
                      <button type="button" className="small danger" data-testid={`variable-delete-${v.name}`} disabled={busy} onClick={() => void remove(v)}>
                        Delete
                      </button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
