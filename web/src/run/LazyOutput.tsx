/** The output renderer, loaded on first use (markdown and the JSON tree are not in the entry chunk). */
import { lazy, Suspense } from "react";
import { fmtJson } from "../ui/format";

const OutputView = lazy(() => import("./OutputView"));
const MarkdownView = lazy(() => import("./OutputView").then((m) => ({ default: m.Markdown })));

export function LazyOutput({ value, testId }: { value: any; testId?: string }) {
  return (
    <Suspense fallback={<pre data-testid={testId}>{typeof value === "string" ? value : fmtJson(value)}</pre>}>
      <OutputView value={value} testId={testId} />
    </Suspense>
  );
}

export function LazyMarkdown({ text, testId }: { text: string; testId?: string }) {
  return (
    <Suspense fallback={<div className="run-markdown" data-testid={testId} style={{ whiteSpace: "pre-wrap" }}>{text}</div>}>
      <MarkdownView text={text} testId={testId} />
    </Suspense>
  );
}
