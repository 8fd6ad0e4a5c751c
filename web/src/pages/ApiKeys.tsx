/** One's API keys (what programs use): list, create (shown once), revoke. */
import { useCallback, useEffect, useState } from "react";
import { authApi } from "../api";
import type { ApiKey, Me } from "../types";
import { CreateKeyDialog } from "../ui/CreateKeyDialog";
import { Dialog } from "../ui/Dialog";
import { errorText, fmtTime } from "../ui/format";

export function ApiKeysPage({ me }: { me: Me }) {
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);

  const load = useCallback(async () => {
    try {
      setKeys(await authApi.listKeys());
      setError(null);
    } catch (e) {
      setError(errorText(e));
      setKeys([]);
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);

  return (
    <div className="page" data-testid="keys-page">
      <div className="page-head">
        <h1>API keys</h1>
        <div className="buttons">
          <button type="button" className="primary" data-testid="new-key" onClick={() => setCreating(true)}>
            New key
          </button>
        </div>
      </div>
      <p className="muted">
        Programs (scripts, CI, the CLI against a remote server) send a key as the <code>x-api-key</code> header. A key acts as you ({me.email}, {me.role}) within its
        scopes. The browser does not need one: it uses your session.
      </p>
      {error && (
        <p className="error" role="alert" data-testid="keys-error">
          {error}
        </p>
      )}
      {keys === null ? (
        <p className="loading">Loading…</p>
      ) : keys.length === 0 ? (
        <p className="muted" data-testid="keys-empty">
          No keys yet.
        </p>
      ) : (
        <table className="flow-table" data-testid="keys-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key</th>
              <th scope="col">Scopes</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id} data-testid={`key-row-${k.id}`}>
                <td>{k.name}</td>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{k.scopes.join(", ")}</td>
                <td>{fmtTime(k.created_at)}</td>
                <td>{k.last_used_at ? fmtTime(k.last_used_at) : "never"}</td>
                <td className="row-actions">
                  <button type="button" className="small danger" data-testid={`revoke-${k.id}`} onClick={() => setRevoking(k)}>
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {creating && (
        <CreateKeyDialog
          title="New API key"
          role={me.role}
          onCreate={async (body) => {
            const k = await authApi.createKey(body);
            void load();
            return k;
          }}
          onClose={() => setCreating(false)}
        />
      )}
      {revoking && (
        <Dialog title={`Revoke "${revoking.name}"?`} onClose={() => setRevoking(null)} testId="revoke-dialog">
          <p>
            Programs using <code>{revoking.prefix}…</code> get 401 from now on. This cannot be undone.
          </p>
          <div className="buttons">
            <button
              type="button"
              className="danger"
              data-testid="revoke-confirm"
              onClick={async () => {
                try {
                  await authApi.revokeKey(revoking.id);
                } catch (e) {
                  setError(errorText(e));
                }
                setRevoking(null);
                await load();
              }}
            >
              Revoke
            </button>
            <button type="button" onClick={() => setRevoking(null)}>
              Cancel
            </button>
          </div>
        </Dialog>
      )}
    </div>
  );
}
