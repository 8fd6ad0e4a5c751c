/** What an import approximated, carried from the library (which imports) to the editor (which
 * opens right after) for one showing: the editor is where the user can act on it. */

const key = (flowId: string) => `plait.imported.${flowId}`;

export interface ImportResult {
  id: string;
  format?: string | null;
  warnings?: string[];
}

const FORMAT_NAMES: Record<string, string> = { ragflow: "a RAGFlow agent" };

export function rememberImport(flow: ImportResult): void {
  if (!flow.format && !flow.warnings?.length) return;
  sessionStorage.setItem(key(flow.id), JSON.stringify({ format: flow.format ?? null, warnings: flow.warnings ?? [] }));
}

/** The notice to show once for `flowId`, or null; reading it forgets it. */
export function takeImportNotice(flowId: string): string | null {
  const raw = sessionStorage.getItem(key(flowId));
  if (!raw) return null;
  sessionStorage.removeItem(key(flowId));
  try {
    const { format, warnings } = JSON.parse(raw) as { format: string | null; warnings: string[] };
    const from = format ? `Imported from ${FORMAT_NAMES[format] ?? format}.` : "Imported.";
    return warnings.length ? `${from} Check: ${warnings.join(" · ")}` : from;
  } catch {
    return null;
  }
}
