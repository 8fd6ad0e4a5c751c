/**
 * Share a flow with named users as viewer or editor (owner or admin). Admins pick from the user
 * list; others type the person's email (or user id): the server resolves it and answers 404 for an
 * unknown one, so the dialog never lists who has an account.
 */
import { useEffect, useId, useState } from "react";
import { authApi } from "../api";
import type { Share, User } from "../types";
import { Dialog } from "../ui/Dialog";
import { errorText } from "../ui/format";

type ShareRole = Share["role"];

/** The id to send for what was typed: a known user's id when the list has the email, else as typed. */
export function shareTarget(typed: string, users: readonly User[] | null): string {
  const t = typed.trim();
  const hit = users?.find((u) => u.email.toLowerCase() === t.toLowerCase() || u.id === t);
  return hit ? hit.id : t;
}

export function ShareDialog({ flowId, flowName, isAdmin, ownerId, onClose }: { flowId: string; flowName: string; isAdmin: boolean; ownerId?: string; onClose: () => void }) {
  const [shares, setShares] = useState<Share[] | null>(null);
  const [users, setUsers] = useState<User[] | null>(null);
  const [who, setWho] = useState("");
  const [role, setRole] = useState<ShareRole>("viewer");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const listId = useId();

  useEffect(() => {
    authApi.shares(flowId).then(setShares, (e) => {
      setError(errorText(e));
      setShares([]);
    });
    if (isAdmin) authApi.listUsers().then(setUsers, () => setUsers(null));
  }, [flowId, isAdmin]);

  const candidates = users?.filter((u) => !u.disabled && u.id !== ownerId && !shares?.some((s) => s.user_id === u.id)) ?? [];

  const put = async (target: string, r: ShareRole) => {
    setError(null);
    setBusy(true);
    try {
      const out = await authApi.share(flowId, target, r);
      setShares((s) => [...(s ?? []).filter((x) => x.user_id !== out.user_id), out].sort((a, b) => a.email.localeCompare(b.email)));
      return true;
    } catch (e) {
      setError((e as any)?.status === 404 ? `No user ${target}.` : errorText(e));
      return false;
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog title={`Share "${flowName}"`} onClose={onClose} testId="share-dialog">
      <p className="muted small-text">Viewers see the flow and its runs; editors also change and run it. Only you (and admins) share or delete it.</p>
      {shares === null ? (
        <p className="loading">Loading…</p>
      ) : shares.length === 0 ? (
        <p className="muted" data-testid="shares-empty">
          Not shared with anyone.
        </p>
      ) : (
        <ul className="share-list" data-testid="share-list">
          {shares.map((s) => (
            <li key={s.user_id} data-testid={`share-${s.email}`}>
              <span>
                {s.name || s.email} {s.name && <span className="muted small-text">{s.email}</span>}
              </span>
              <label className="visually-hidden" htmlFor={`share-role-${s.user_id}`}>
                Role of {s.email}
              </label>
              <select id={`share-role-${s.user_id}`} data-testid={`share-role-${s.email}`} value={s.role} disabled={busy} onChange={(e) => void put(s.user_id, e.target.value as ShareRole)}>
                <option value="viewer">viewer</option>
                <option value="editor">editor</option>
              </select>
              <button
                type="button"
                className="small danger"
                data-testid={`share-remove-${s.email}`}
                disabled={busy}
                onClick={async () => {
                  try {
                    await authApi.unshare(flowId, s.user_id);
                    setShares((l) => l?.filter((x) => x.user_id !== s.user_id) ?? null);
                  } catch (e) {
                    setError(errorText(e));
                  }
                }}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          if (!who.trim()) return setError("Enter the email of the person to share with.");
          if (await put(shareTarget(who, users), role)) setWho("");
        }}
      >
        <label htmlFor="share-who">{isAdmin ? "User" : "Email (or user id) of the person"}</label>
        <div className="share-add">
          <input id="share-who" data-testid="share-who" list={isAdmin ? listId : undefined} autoComplete="off" placeholder="name@example.com" value={who} onChange={(e) => setWho(e.target.value)} />
          {isAdmin && (
            <datalist id={listId}>
              {candidates.map((u) => (
                <option key={u.id} value={u.email}>
                  {u.name}
                </option>
              ))}
            </datalist>
          )}
          <label className="visually-hidden" htmlFor="share-new-role">
            Role
          </label>
          <select id="share-new-role" data-testid="share-new-role" value={role} onChange={(e) => setRole(e.target.value as ShareRole)}>
            <option value="viewer">viewer</option>
            <option value="editor">editor</option>
          </select>
          <button type="submit" className="primary" disabled={busy} data-testid="share-add">
            Share
          </button>
        </div>
        {error && (
          <p className="error" role="alert" data-testid="share-error">
            {error}
          </p>
        )}
      </form>
      <div className="buttons">
        <button type="button" onClick={onClose} data-testid="share-close">
          Done
        </button>
      </div>
    </Dialog>
  );
}
