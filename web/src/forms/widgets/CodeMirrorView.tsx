/**
 * The CodeMirror 6 editor itself (syntax highlighting, line numbers, brackets). Heavy, so it is
 * only ever loaded through CodeEditor's lazy import, never from the entry chunk. Follows the
 * app's light/dark theme.
 */
import { useEffect, useRef } from "react";
import { basicSetup, EditorView } from "codemirror";
import { Compartment, EditorState } from "@codemirror/state";
import { python } from "@codemirror/lang-python";
import { json } from "@codemirror/lang-json";
import { javascript } from "@codemirror/lang-javascript";
import { oneDark } from "@codemirror/theme-one-dark";
import { useResolvedTheme } from "../../theme/theme";
import type { CodeLanguage } from "../schema";
import type { CodeEditorProps } from "./CodeEditor";

function languageOf(l: CodeLanguage) {
  return l === "json" ? json() : l === "javascript" ? javascript() : python();
}

const base = EditorView.theme({
  "&": { fontSize: "13px", border: "1px solid var(--line)", borderRadius: "4px", backgroundColor: "var(--panel)", color: "var(--text)" },
  ".cm-scroller": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace", minHeight: "6em", maxHeight: "24em" },
  "&.cm-focused": { outline: "2px solid var(--accent)" },
  ".cm-gutters": { backgroundColor: "var(--panel)", color: "var(--muted)", borderRight: "1px solid var(--line)" },
});

export default function CodeMirrorView({ id, value, onChange, language, invalid, describedBy, testId }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const themeSlot = useRef(new Compartment());
  const changed = useRef(onChange);
  changed.current = onChange;
  const theme = useResolvedTheme();

  useEffect(() => {
    const v = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          languageOf(language),
          base,
          themeSlot.current.of(theme === "dark" ? oneDark : []),
          EditorView.contentAttributes.of({
            id,
            "aria-labelledby": `${id}-label`,
            ...(describedBy ? { "aria-describedby": describedBy } : {}),
            ...(invalid ? { "aria-invalid": "true" } : {}),
          }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) changed.current(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    return () => {
      v.destroy();
      view.current = null;
    };
    // the editor is made once; value and theme changes are applied below
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [language]);

  useEffect(() => {
    view.current?.dispatch({ effects: themeSlot.current.reconfigure(theme === "dark" ? oneDark : []) });
  }, [theme]);

  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);

  return <div ref={host} className="code-editor" data-testid={testId} data-language={language} data-editor="codemirror" />;
}
