/**
 * A mapping (headers, query parameters, a transform's mapping, a code node's arguments) edited as
 * rows of name and value. Rows live in the form while they are typed (an empty or repeated name
 * is kept as a row but not written), so the document only ever holds a clean object. Pure.
 */

export interface KvRow {
  key: string;
  value: string;
}

/** How values are typed: strings as typed, or loose (JSON when it parses, else the text). */
export type KvValues = "string" | "loose";

/** A value as row text. In loose rows a string that would read back as another type ("2",
 * "true") is shown quoted, so reading the rows back gives the same object. */
export function formatValue(v: unknown, values: KvValues = "loose"): string {
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") return JSON.stringify(v);
  return values === "loose" && parseValue(v, "loose") !== v ? JSON.stringify(v) : v;
}

/** A value typed in a row: 5 -> 5, true -> true, {"a":1} -> object, "5" -> the text 5, anything
 * else the text as typed. */
export function parseValue(text: string, values: KvValues): unknown {
  if (values === "string") return text;
  const t = text.trim();
  if (/^(-?\d+(\.\d+)?|true|false|null)$/.test(t) || /^[[{"]/.test(t)) {
    try {
      return JSON.parse(t);
    } catch {
      return text;
    }
  }
  return text;
}

export function objectToRows(obj: Record<string, unknown> | null | undefined, values: KvValues = "loose"): KvRow[] {
  if (!obj || typeof obj !== "object") return [];
  return Object.entries(obj).map(([key, value]) => ({ key, value: formatValue(value, values) }));
}

/** The object the rows mean (first row wins on a repeated name, nameless rows left out);
 * undefined when no row has a name, so the field goes back to unset. */
export function rowsToObject(rows: KvRow[], values: KvValues): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  for (const r of rows) {
    const k = r.key.trim();
    if (!k || k in out) continue;
    out[k] = parseValue(r.value, values);
  }
  return Object.keys(out).length ? out : undefined;
}

/** Names used by more than one row (shown as a problem on those rows). */
export function duplicateKeys(rows: KvRow[]): Set<string> {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const r of rows) {
    const k = r.key.trim();
    if (!k) continue;
    if (seen.has(k)) dup.add(k);
    seen.add(k);
  }
  return dup;
}
