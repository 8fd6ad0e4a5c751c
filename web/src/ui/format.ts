export function fmtDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} m ${Math.round((ms % 60000) / 1000)} s`;
}

export function fmtTime(ts: number | null | undefined): string {
  if (!ts) return "—";
  return new Date(ts * 1000).toLocaleString();
}

export function fmtJson(v: any): string {
  if (v === undefined) return "—";
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

export function download(name: string, text: string, mime: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: mime }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function errorText(e: unknown): string {
  if (e && typeof e === "object" && "message" in e) {
    const probs = (e as any).problems as any[] | undefined;
    const base = String((e as any).message);
    if (probs?.length) return `${base}: ${probs.map((p) => (p.node_id ? `${p.node_id}: ` : "") + (p.field ? `${p.field}: ` : "") + p.message).join("; ")}`;
    return base;
  }
  return String(e);
}

/** A problem's hint as the web UI says it: the validator's hints are shared with the CLI, and
 * the ones that name a `plait ...` command become the UI action that does the same. */
export function uiHint(p: { code?: string; hint?: string | null }): string | undefined {
  const hint = p.hint ?? undefined;
  if (!hint || !/`plait\s/.test(hint)) return hint;
  if (p.code === "unknown_type") return "pick a node type from the palette";
  if (p.code === "invalid_config") return "the node's settings form shows what this field takes";
  return hint.replace(/\s*[(,;]?\s*(run|see|or|with)?\s*`plait [^`]*`[^.;)]*/g, "").trim() || undefined;
}
