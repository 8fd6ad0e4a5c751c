/** Checkboxes for an API key's scopes; the ones the key's user cannot grant are disabled. */
import { ALL_SCOPES, SCOPE_HELP, toggleScope } from "../state/access";
import type { Scope } from "../types";

export function ScopePicker({ value, allowed, onChange }: { value: Scope[]; allowed: readonly Scope[]; onChange: (scopes: Scope[]) => void }) {
  return (
    <fieldset className="field scopes">
      <legend>Scopes</legend>
      {ALL_SCOPES.map((s) => {
        const ok = allowed.includes(s);
        return (
          <label key={s} className="check">
            <input
              type="checkbox"
              data-testid={`scope-${s}`}
              checked={value.includes(s)}
              disabled={!ok}
              onChange={(e) => onChange(toggleScope(value, s, e.target.checked).filter((x) => allowed.includes(x)))}
            />{" "}
            <strong>{s}</strong> <span className="muted">{ok ? SCOPE_HELP[s] : `${SCOPE_HELP[s]} (not for this user's role)`}</span>
          </label>
        );
      })}
    </fieldset>
  );
}
