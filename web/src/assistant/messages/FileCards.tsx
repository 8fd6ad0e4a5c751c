/**
 * Files the assistant wrote (F38/F39): name and size, Open (the content from the event, rendered as
 * sanitised markdown in a dialog; nothing is fetched) and Download (a text file built in memory).
 */
import { useState } from "react";
import { createPortal } from "react-dom";
import { Dialog } from "../../ui/Dialog";
import type { FileCard } from "../types";
import { Markdown } from "./Markdown";

export function fileSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export function baseName(path: string): string {
  return path.split(/[\\/]/).pop() || path;
}

/** Save `content` as `name` (text/plain, UTF-8) and release the object URL. */
export function downloadText(name: string, content: string): void {
  const url = URL.createObjectURL(new Blob([content], { type: "text/plain;charset=utf-8" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

function OneFile({ file }: { file: FileCard }) {
  const [open, setOpen] = useState(false);
  const has = file.content !== undefined;
  return (
    <div className="assistant-file" data-testid="assistant-file" data-path={file.path}>
      <span className="assistant-card-icon" aria-hidden="true">
        ▤
      </span>
      <span className="assistant-file-name" title={file.path}>
        {baseName(file.path)}
      </span>
      <span className="assistant-muted">{fileSize(file.size)}</span>
      <span className="assistant-file-actions">
        <button type="button" className="small" data-testid="assistant-file-open" onClick={() => setOpen(true)}>
          Open
        </button>
        <button type="button" className="small" data-testid="assistant-file-download" disabled={!has} title={has ? undefined : "The assistant edited this file: its content did not come with the reply"} onClick={() => has && downloadText(baseName(file.path), file.content!)}>
          Download
        </button>
      </span>
      {open &&
        // in <body>: the panel's transform would otherwise hold the dialog's fixed backdrop inside it
        createPortal(
          <Dialog title={file.path} onClose={() => setOpen(false)} testId="assistant-file-dialog" wide>
            {has ? <Markdown text={file.content!} testId="assistant-file-content" /> : <p className="assistant-muted">Preview not available: the assistant edited this file and its content did not come with the reply.</p>}
          </Dialog>,
          document.body,
        )}
    </div>
  );
}

export function FileCards({ files }: { files: FileCard[] | undefined }) {
  if (!files?.length) return null;
  return (
    <div className="assistant-files">
      {files.map((f, i) => (
        <OneFile key={`${f.path}-${i}`} file={f} />
      ))}
    </div>
  );
}
