/**
 * The assistant's text as markdown: marked, sanitised by DOMPurify, with code blocks highlighted
 * by highlight.js (core plus the few languages the assistant writes). Part of the panel's lazy
 * chunk, never of the editor's first load. highlight.js works on the text of each `<code>` and
 * writes escaped spans back, so highlighting cannot reintroduce markup DOMPurify removed.
 */
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import typescript from "highlight.js/lib/languages/typescript";
import yaml from "highlight.js/lib/languages/yaml";
import { marked } from "marked";
import { useLayoutEffect, useMemo, useRef } from "react";

hljs.registerLanguage("python", python);
hljs.registerLanguage("json", json);
hljs.registerLanguage("javascript", javascript);
hljs.registerLanguage("typescript", typescript);
hljs.registerLanguage("bash", bash);
hljs.registerLanguage("yaml", yaml);

/** Sanitised HTML of `text` (exported for tests). */
export function markdownHtml(text: string): string {
  return DOMPurify.sanitize(marked.parse(text, { async: false, gfm: true, breaks: true }) as string);
}

/** Highlight the code blocks under `root` (each once). */
export function highlightIn(root: HTMLElement): void {
  root.querySelectorAll<HTMLElement>("pre code").forEach((el) => {
    if (el.dataset.highlighted) return;
    const lang = /language-([\w-]+)/.exec(el.className)?.[1];
    const text = el.textContent ?? "";
    const out = lang && hljs.getLanguage(lang) ? hljs.highlight(text, { language: lang, ignoreIllegals: true }) : hljs.highlightAuto(text);
    el.innerHTML = out.value; // highlight.js escapes the text it wraps
    el.classList.add("hljs");
    el.dataset.highlighted = "yes";
  });
}

export function Markdown({ text, testId, className }: { text: string; testId?: string; className?: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const html = useMemo(() => markdownHtml(text), [text]);
  // every commit: React may write the HTML again; blocks already highlighted are skipped
  useLayoutEffect(() => {
    if (ref.current) highlightIn(ref.current);
  });
  return <div ref={ref} className={`assistant-markdown${className ? ` ${className}` : ""}`} data-testid={testId} dangerouslySetInnerHTML={{ __html: html }} />;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** A code block, highlighted (View code). */
export function CodeBlock({ code, language = "python", testId }: { code: string; language?: string; testId?: string }) {
  const html = useMemo(() => (hljs.getLanguage(language) ? hljs.highlight(code, { language, ignoreIllegals: true }).value : escapeHtml(code)), [code, language]);
  return (
    <pre className="assistant-code" data-testid={testId}>
      <code className={`hljs language-${language}`} dangerouslySetInnerHTML={{ __html: html }} />
    </pre>
  );
}
