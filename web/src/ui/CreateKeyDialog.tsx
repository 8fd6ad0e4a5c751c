/** Create an API key (name + scopes), then show it once. Used for one's own keys and, by admins,
 * for another user's. */
import { useState } from "react";
import type { KeyRequest } from "../api";
import { allowedScopes, defaultScopes } from "../state/access";
import type { NewApiKey, Role, Scope } from "../types";
import { Dialog } from "./Dialog";
import { errorText } from "./format";
import { ScopePicker } from "./ScopePicker";
import { SecretReveal } from "./SecretReveal";

export function CreateKeyDialog({
  title,
  role,
  onCreate,
  onClose,
}: {
  title: string;
  /** The role of the key's user: which scopes it can carry. */
  role: Role;
  onCreate: (body: KeyRequest) => Promise<NewApiKey>;
  onClose: () => void;
}) {
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<Scope[]>(() => defaultScopes(role));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<NewApiKey | null>(null);
  if (created)
    return (
      <Dialog title={`Key "${created.name}" created`} onClose={onClose} testId="key-created-dialog">
        <SecretReveal label={`API key (scopes: ${created.scopes.join(", ")})`} value={created.key} testId="key-created" />
        <p className="small-text muted">
          Programs send it as the <code>x-api-key</code> header. Revoke it on the API keys page when it is no longer needed.
        </p>
        <div className="buttons">
          <button type="button" className="primary" data-testid="key-created-done" onClick={onClose}>
            I have copied it
          </button>
        </div>
      </Dialog>
    );
  return (
    <Dialog title={title} onClose={onClose} testId="create-key-dialog">
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          if (!name.trim()) return setError("Give the key a name (what uses it).");
          if (!scopes.length) return setError("Pick at least one scope.");
          setBusy(true);
          try {
            setCreated(await onCreate({ name: name.trim(), scopes }));
          } catch (err) {
            setError(errorText(err));
          } finally {
            setBusy(false);
          }
        }}
      >
        <label htmlFor="key-name">Name</label>
        <input id="key-name" data-testid="key-name" placeholder="ci, notebook, zapier…" value={name} onChange={(e) => setName(e.target.value)} />
        <ScopePicker value={scopes} allowed={allowedScopes(role)} onChange={setScopes} />
        {error && (
          <p className="error" role="alert" data-testid="create-key-error">
            {error}
          </p>
        )}
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy} data-testid="create-key-submit">
            Create key
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}
