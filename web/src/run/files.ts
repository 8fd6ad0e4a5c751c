/**
 * Outputs that are files: a value shaped like a file (`{filename|name, content|data|base64|url,
 * mime_type|content_type}`) is offered as a download instead of being shown as JSON.
 */

export interface OutputFile {
  name: string;
  mime: string;
  size?: number;
  /** a URL for the link's href (a data: or blob: URL, or the file's own http(s) URL) */
  href(): string;
}

function str(v: any): string | undefined {
  return typeof v === "string" && v ? v : undefined;
}

export function fileOf(v: any): OutputFile | null {
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const name = str(v.filename) ?? str(v.file_name) ?? (str(v.name) && (v.content !== undefined || v.base64 || v.data || v.url) ? v.name : undefined);
  if (!name) return null;
  const mime = str(v.mime_type) ?? str(v.content_type) ?? str(v.mime) ?? "application/octet-stream";
  const url = str(v.url);
  // a run artifact's reference ({artifact_id, filename, mime_type, size, url}) downloads from the
  // server with the run's access (the page's session goes along: same origin)
  if (url && (/^(https?:|data:)/.test(url) || url.startsWith("/api/"))) return { name, mime, size: typeof v.size === "number" ? v.size : undefined, href: () => url };
  const b64 = str(v.base64) ?? (v.encoding === "base64" ? str(v.content) ?? str(v.data) : undefined);
  if (b64) return { name, mime, size: typeof v.size === "number" ? v.size : Math.floor((b64.length * 3) / 4), href: () => `data:${mime};base64,${b64}` };
  const text = typeof v.content === "string" ? v.content : typeof v.data === "string" ? v.data : undefined;
  if (text === undefined) return null;
  return { name, mime, size: text.length, href: () => URL.createObjectURL(new Blob([text], { type: mime })) };
}

/** The file-shaped values inside an output (itself, or up to two levels down), with their path. */
export function filesIn(v: any, path = "", depth = 0): { path: string; file: OutputFile }[] {
  const own = fileOf(v);
  if (own) return [{ path, file: own }];
  if (depth >= 2 || !v || typeof v !== "object") return [];
  const entries: [string, any][] = Array.isArray(v) ? v.map((x, i) => [String(i), x]) : Object.entries(v);
  return entries.flatMap(([k, x]) => filesIn(x, path ? `${path}.${k}` : k, depth + 1));
}
