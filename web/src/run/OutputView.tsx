/**
 * How a run's output looks to people: text as markdown (marked, sanitised by DOMPurify), JSON as
 * a collapsible tree (react-json-view-lite), files as downloads. This module is the heavy part of
 * the result panel and is loaded on demand (`LazyOutput`), so the editor's first load stays small.
 */
import DOMPurify from "dompurify";
import { marked } from "marked";
import { useMemo } from "react";
import { JsonView } from "react-json-view-lite";

type StyleProps = Parameters<typeof JsonView>[0]["style"] & object;
import { fileOf, filesIn, type OutputFile } from "./files";

const TREE_STYLE: StyleProps = {
  container: "jt-container",
  basicChildStyle: "jt-child",
  label: "jt-label",
  clickableLabel: "jt-label jt-clickable",
  nullValue: "jt-null",
  undefinedValue: "jt-null",
  numberValue: "jt-number",
  stringValue: "jt-string",
  booleanValue: "jt-boolean",
  otherValue: "jt-other",
  punctuation: "jt-punct",
  expandIcon: "jt-icon jt-expand",
  collapseIcon: "jt-icon jt-collapse",
  collapsedContent: "jt-collapsed",
  childFieldsContainer: "jt-children",
  noQuotesForStringValues: false,
  quotesForFieldNames: false,
  ariaLables: { collapseJson: "collapse", expandJson: "expand" },
  stringifyStringValues: true,
};

export function Markdown({ text, testId }: { text: string; testId?: string }) {
  const html = useMemo(() => DOMPurify.sanitize(marked.parse(text, { async: false, gfm: true, breaks: true }) as string), [text]);
  return <div className="run-markdown" data-testid={testId} dangerouslySetInnerHTML={{ __html: html }} />;
}

export function JsonTree({ value, testId }: { value: any; testId?: string }) {
  return (
    <div className="run-json" data-testid={testId}>
      <JsonView data={value} style={TREE_STYLE} shouldExpandNode={(level) => level < 2} />
    </div>
  );
}

function FileLink({ file }: { file: OutputFile }) {
  const href = useMemo(() => file.href(), [file]);
  return (
    <a className="run-file" href={href} download={file.name} data-testid="run-output-file">
      ⬇ {file.name}
      {file.size !== undefined ? <span className="muted"> ({file.size} bytes)</span> : null}
    </a>
  );
}

/** One output value, rendered by what it is. */
export default function OutputView({ value, testId }: { value: any; testId?: string }) {
  const file = fileOf(value);
  if (file) return <FileLink file={file} />;
  if (typeof value === "string") return <Markdown text={value} testId={testId} />;
  if (value === null || value === undefined || typeof value !== "object") return <code data-testid={testId}>{String(value)}</code>;
  const files = filesIn(value);
  return (
    <>
      {files.length > 0 && (
        <div className="run-files">
          {files.map(({ path, file }) => (
            <FileLink key={path} file={file} />
          ))}
        </div>
      )}
      <JsonTree value={value} testId={testId} />
    </>
  );
}
