/** Users (admins only): list, create, change role, disable/enable, set a password, create a key
 * for a user. The server refuses non-admins (404); the header hides the link from them. */
import { useCallback, useEffect, useState } from "react";
import { authApi, type NewUser, type UserPatch } from "../api";
import { MIN_PASSWORD, ROLE_HELP } from "../state/access";
import { authStore } from "../state/auth";
import type { Me, Role, User } from "../types";
import { CreateKeyDialog } from "../ui/CreateKeyDialog";
import { Dialog } from "../ui/Dialog";
import { errorText, fmtTime } from "../ui/format";

const ROLES: Role[] = ["admin", "editor", "viewer"];

type Pending = { kind: "new" } | { kind: "key"; user: User } | { kind: "password"; user: User } | { kind: "disable"; user: User };

export function UsersPage({ me }: { me: Me }) {
  const [users, setUsers] = useState<User[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [pending, setPending] = useState<Pending | null>(null);

  const load = useCallback(async () => {
    try {
      setUsers(await authApi.listUsers());
      setError(null);
    } catch (e) {
      setError(errorText(e));
      setUsers([]);
    }
  }, []);
  useEffect(() => {
    if (me.role === "admin") void load();
  }, [load, me.role]);

  const update = async (user: User, patch: UserPatch, done: string) => {
    try {
      setError(null);
      const out = await authApi.updateUser(user.id, patch);
      setUsers((us) => us?.map((u) => (u.id === out.id ? out : u)) ?? null);
      if (out.id === me.id) authStore.refresh(out);
      setNotice(done);
    } catch (e) {
      setError(errorText(e));
    }
  };

  if (me.role !== "admin")
    return (
      <div className="page" data-testid="users-page">
        <h1>Users</h1>
        <p className="muted">Only admins manage users.</p>
      </div>
    );

  return (
    <div className="page" data-testid="users-page">
      <div className="page-head">
        <h1>Users</h1>
        <div className="buttons">
          <button type="button" className="primary" data-testid="new-user" onClick={() => setPending({ kind: "new" })}>
            New user
          </button>
        </div>
      </div>
      {error && (
        <p className="error" role="alert" data-testid="users-error">
          {error}
        </p>
      )}
      {notice && (
        <p className="notice" role="status" data-testid="users-notice">
          {notice}
        </p>
      )}
      {users === null ? (
        <p className="loading">Loading…</p>
      ) : (
        <table className="flow-table" data-testid="users-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {users.map((u) => {
              const self = u.id === me.id;
              return (
                <tr key={u.id} data-testid={`user-row-${u.email}`} className={u.disabled ? "disabled-row" : undefined}>
                  <td>
                    {u.name || "—"}
                    {self && <span className="muted"> (you)</span>}
                  </td>
                  <td>{u.email}</td>
                  <td>
                    <label className="visually-hidden" htmlFor={`role-${u.id}`}>
                      Role of {u.email}
                    </label>
                    <select
                      id={`role-${u.id}`}
                      data-testid={`user-role-${u.email}`}
                      value={u.role}
                      disabled={self}
                      title={self ? "You cannot change your own role" : ROLE_HELP[u.role]}
                      onChange={(e) => update(u, { role: e.target.value as Role }, `${u.email} is now ${e.target.value}.`)}
                    >
                      {ROLES.map((r) => (
                        <option key={r} value={r}>
                          {r}
                        </option>
                      ))}
                    </select>
                  </td>
                  <td data-testid={`user-status-${u.email}`}>{u.disabled ? "disabled" : "active"}</td>
                  <td>{fmtTime(u.created_at)}</td>
                  <td className="row-actions">
                    <button type="button" className="small" data-testid={`user-key-${u.email}`} disabled={u.disabled} onClick={() => setPending({ kind: "key", user: u })}>
                      Create key
                    </button>
                    <button type="button" className="small" data-testid={`user-password-${u.email}`} onClick={() => setPending({ kind: "password", user: u })}>
                      Set password
                    </button>
                    {u.disabled ? (
                      <button type="button" className="small" data-testid={`user-enable-${u.email}`} onClick={() => update(u, { disabled: false }, `${u.email} can sign in again.`)}>
                        Enable
                      </button>
                    ) : (
                      <button type="button" className="small danger" data-testid={`user-disable-${u.email}`} disabled={self} onClick={() => setPending({ kind: "disable", user: u })}>
                        Disable
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {pending?.kind === "new" && (
        <NewUserDialog
          onClose={() => setPending(null)}
          onCreate={async (body) => {
            const u = await authApi.createUser(body);
            setPending(null);
            setNotice(body.password ? `Created ${u.email}: they can sign in with the password you set.` : `Created ${u.email}: set a password or create a key for them.`);
            await load();
          }}
        />
      )}
      {pending?.kind === "key" && (
        <CreateKeyDialog
          title={`New API key for ${pending.user.email}`}
          role={pending.user.role}
          onCreate={(body) => authApi.createUserKey(pending.user.id, body)}
          onClose={() => setPending(null)}
        />
      )}
      {pending?.kind === "password" && (
        <PasswordDialog
          user={pending.user}
          onClose={() => setPending(null)}
          onSave={async (password) => {
            await authApi.updateUser(pending.user.id, { password });
            setPending(null);
            setNotice(`New password set for ${pending.user.email}.`);
          }}
        />
      )}
      {pending?.kind === "disable" && (
        <Dialog title={`Disable ${pending.user.email}?`} onClose={() => setPending(null)} testId="disable-dialog">
          <p>They are signed out, cannot sign in, and their API keys stop working. Their flows stay; enable them again at any time.</p>
          <div className="buttons">
            <button
              type="button"
              className="danger"
              data-testid="disable-confirm"
              onClick={async () => {
                const u = pending.user;
                setPending(null);
                await update(u, { disabled: true }, `${u.email} is disabled.`);
              }}
            >
              Disable
            </button>
            <button type="button" onClick={() => setPending(null)}>
              Cancel
            </button>
          </div>
        </Dialog>
      )}
    </div>
  );
}

function NewUserDialog({ onCreate, onClose }: { onCreate: (body: NewUser) => Promise<void>; onClose: () => void }) {
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [role, setRole] = useState<Role>("editor");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <Dialog title="New user" onClose={onClose} testId="new-user-dialog">
      <form
        noValidate
        onSubmit={async (e) => {
          e.preventDefault();
          if (!/^[^\s@]+@[^\s@]+$/.test(email.trim())) return setError("Enter an email address.");
          if (password && password.length < MIN_PASSWORD) return setError(`A password needs at least ${MIN_PASSWORD} characters.`);
          setBusy(true);
          try {
            await onCreate({ email: email.trim(), name: name.trim(), role, ...(password ? { password } : {}) });
          } catch (err) {
            setError(errorText(err));
          } finally {
            setBusy(false);
          }
        }}
      >
        <label htmlFor="new-user-email">Email</label>
        <input id="new-user-email" data-testid="new-user-email" type="email" autoComplete="off" value={email} onChange={(e) => setEmail(e.target.value)} />
        <label htmlFor="new-user-name">Name</label>
        <input id="new-user-name" data-testid="new-user-name" autoComplete="off" value={name} onChange={(e) => setName(e.target.value)} />
        <label htmlFor="new-user-role">Role</label>
        <select id="new-user-role" data-testid="new-user-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}: {ROLE_HELP[r]}
            </option>
          ))}
        </select>
        <label htmlFor="new-user-password">Password (optional: without one they sign in with a key you create)</label>
        <input id="new-user-password" data-testid="new-user-password" type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} />
        {error && (
          <p className="error" role="alert" data-testid="new-user-error">
            {error}
          </p>
        )}
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy} data-testid="new-user-submit">
            Create user
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function PasswordDialog({ user, onSave, onClose }: { user: User; onSave: (password: string) => Promise<void>; onClose: () => void }) {
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  return (
    <Dialog title={`Set a password for ${user.email}`} onClose={onClose} testId="password-dialog">
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          if (password.length < MIN_PASSWORD) return setError(`A password needs at least ${MIN_PASSWORD} characters.`);
          try {
            await onSave(password);
          } catch (err) {
            setError(errorText(err));
          }
        }}
      >
        <label htmlFor="set-password">New password</label>
        <input id="set-password" data-testid="set-password" type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} />
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <div className="buttons">
          <button type="submit" className="primary" data-testid="set-password-submit">
            Save
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}
