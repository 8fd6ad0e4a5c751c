/**
 * The flow's triggers: schedules (cron in a time zone) and webhooks with their own secret. Runs
 * they start act as the flow's owner and show their trigger in the run history. A webhook's secret
 * is shown once, right after it is created (the server keeps only a hash and an encrypted copy).
 */
import { useEffect, useState } from "react";
import { triggerApi } from "../api";
import type { Trigger } from "../types";
import { Dialog } from "../ui/Dialog";
import { errorText } from "../ui/format";

function describe(t: Trigger): string {
  if (t.kind === "schedule") {
    const c = t.config as { cron?: string; timezone?: string; missed?: string; overlap?: string };
    return `${c.cron} (${c.timezone ?? "UTC"}) · missed: ${c.missed ?? "skip"} · overlap: ${c.overlap ?? "skip"}`;
  }
  return `POST ${t.url}`;
}

export function TriggersDialog({ flowId, canEdit, onClose }: { flowId: string; canEdit: boolean; onClose: () => void }) {
  const [triggers, setTriggers] = useState<Trigger[] | null>(null);
  const [kind, setKind] = useState<"schedule" | "webhook">("schedule");
  const [cron, setCron] = useState("0 9 * * *");
  const [timezone, setTimezone] = useState(() => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC");
  const [secret, setSecret] = useState<{ id: string; secret: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    triggerApi.list(flowId).then(setTriggers, (e) => {
      setError(errorText(e));
      setTriggers([]);
    });
  }, [flowId]);

  const act = async (fn: () => Promise<void>) => {
    setError(null);
    setBusy(true);
    try {
      await fn();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const replace = (t: Trigger) => setTriggers((l) => (l ?? []).map((x) => (x.id === t.id ? t : x)));

  return (
    <Dialog title="Triggers" onClose={onClose} testId="triggers-dialog">
      <p className="muted small-text">Schedules and webhooks start the latest published version, as the flow's owner.</p>
      {triggers === null ? (
        <p className="loading">Loading…</p>
      ) : triggers.length === 0 ? (
        <p className="muted" data-testid="triggers-empty">
          No triggers.
        </p>
      ) : (
        <ul className="share-list" data-testid="trigger-list">
          {triggers.map((t) => (
            <li key={t.id} data-testid={`trigger-${t.id}`}>
              <span>
                <strong>{t.kind}</strong> <span className="small-text">{describe(t)}</span>
                {t.next_fire_at && <span className="muted small-text"> · next {new Date(t.next_fire_at * 1000).toLocaleString()}</span>}
                {secret?.id === t.id && (
                  <span className="small-text" data-testid="trigger-secret">
                    {" "}
                    · secret (shown once): <code>{secret.secret}</code>
                  </span>
                )}
              </span>
              {canEdit && (
                <>
                  <button type="button" className="small" disabled={busy} data-testid={`trigger-toggle-${t.id}`} onClick={() => act(async () => replace(await triggerApi.update(flowId, t.id, { enabled: !t.enabled })))}>
                    {t.enabled ? "Disable" : "Enable"}
                  </button>
                  <button
                    type="button"
                    className="small danger"
                    disabled={busy}
                    data-testid={`trigger-delete-${t.id}`}
                    onClick={() =>
                      act(async () => {
                        await triggerApi.remove(flowId, t.id);
                        setTriggers((l) => l?.filter((x) => x.id !== t.id) ?? null);
                      })
                    }
                  >
                    Delete
                  </button>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
      {canEdit && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void act(async () => {
              const config = kind === "schedule" ? { cron: cron.trim(), timezone: timezone.trim() || "UTC" } : {};
              const t = await triggerApi.create(flowId, kind, config);
              setTriggers((l) => [...(l ?? []), t]);
              if (t.secret) setSecret({ id: t.id, secret: t.secret });
            });
          }}
        >
          <div className="share-add">
            <label className="visually-hidden" htmlFor="trigger-kind">
              Kind
            </label>
            <select id="trigger-kind" data-testid="trigger-kind" value={kind} onChange={(e) => setKind(e.target.value as "schedule" | "webhook")}>
              <option value="schedule">schedule</option>
              <option value="webhook">webhook</option>
            </select>
            {kind === "schedule" && (
              <>
                <label className="visually-hidden" htmlFor="trigger-cron">
                  Cron expression
                </label>
                <input id="trigger-cron" data-testid="trigger-cron" placeholder="0 9 * * 1-5" value={cron} onChange={(e) => setCron(e.target.value)} />
                <label className="visually-hidden" htmlFor="trigger-tz">
                  Time zone
                </label>
                <input id="trigger-tz" data-testid="trigger-tz" placeholder="Europe/Paris" value={timezone} onChange={(e) => setTimezone(e.target.value)} />
              </>
            )}
            <button type="submit" className="primary" disabled={busy} data-testid="trigger-add">
              Add
            </button>
          </div>
        </form>
      )}
      {error && (
        <p className="error" role="alert" data-testid="trigger-error">
          {error}
        </p>
      )}
      <div className="buttons">
        <button type="button" onClick={onClose} data-testid="triggers-close">
          Done
        </button>
      </div>
    </Dialog>
  );
}
