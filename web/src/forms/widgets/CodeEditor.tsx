/**
 * A code field (a code node's Python, a JSON body or schema): CodeMirror with highlighting,
 * loaded lazily so the editor's ~150 kB stay out of the initial bundle; a plain textarea stands
 * in while it loads. JSON is checked as it is typed and the problem shown under the editor.
 */
import { lazy, Suspense } from "react";
import type { CodeLanguage } from "../schema";

export interface CodeEditorProps {
  id: string;
  testId: string;
  value: string;
  onChange: (text: string) => void;
  language: CodeLanguage;
  invalid?: boolean;
  describedBy?: string;
}

const CodeMirrorView = lazy(() => import("./CodeMirrorView"));

export function CodeEditor(props: CodeEditorProps) {
  const fallback = (
    <textarea
      id={props.id}
      data-testid={props.testId}
      className="code-fallback"
      rows={6}
      spellCheck={false}
      value={props.value}
      aria-invalid={props.invalid || undefined}
      aria-describedby={props.describedBy}
      onChange={(e) => props.onChange(e.target.value)}
    />
  );
  return (
    <Suspense fallback={fallback}>
      <CodeMirrorView {...props} />
    </Suspense>
  );
}

/** What is wrong with a JSON text ("" and templates are allowed: a body may be a template). */
export function jsonProblem(text: string, allowTemplate: boolean): string | null {
  const t = text.trim();
  if (!t) return null;
  if (allowTemplate && !/^[[{]/.test(t)) return null;
  if (allowTemplate && /\{\{[^}]*\}\}/.test(t)) return null;
  try {
    JSON.parse(t);
    return null;
  } catch (e) {
    return `Not valid JSON: ${(e as Error).message}`;
  }
}
