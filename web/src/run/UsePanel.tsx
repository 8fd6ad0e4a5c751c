/**
 * "Use this flow": how programs start it. Ready-to-copy curl and Python (httpx) calls that run
 * the latest published version with the flow's inputs (the API key is the `$PLAIT_API_KEY`
 * placeholder, the address the page's own), the URLs of its webhook triggers, and its name as a
 * tool of plait's MCP server. Says so when nothing is published yet (those calls run the latest
 * published version, never the draft).
 */
import { useEffect, useState } from "react";
import { api, triggerApi } from "../api";
import type { FlowDocument, Trigger, VersionOut } from "../types";
import { Dialog } from "../ui/Dialog";
import { errorText } from "../ui/format";
import { curlSnippet, exampleInputs, mcpToolName, pythonSnippet, webhookSnippet, webhookUrl } from "./snippets";
import { loadLastInputs } from "./storage";
import "./run.css";

function CopyBlock({ label, text, testId }: { label: string; text: string; testId: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // no clipboard permission (http, an old browser): select the text for Ctrl+C
      const el = document.querySelector<HTMLElement>(`[data-testid="${testId}"]`);
      const range = document.createRange();
      if (el) {
        range.selectNodeContents(el);
        const sel = window.getSelection();
        sel?.removeAllRanges();
        sel?.addRange(range);
      }
    }
    setCopied(true);
    setTimeout(() => setCopied(false), 1500);
  };
  return (
    <div className="copy-block">
      <div className="copy-head">
        <span>{label}</span>
        <button type="button" className="small" onClick={copy} data-testid={`${testId}-copy`}>
          {copied ? "Copied" : "Copy"}
        </button>
      </div>
      <pre data-testid={testId}>{text}</pre>
    </div>
  );
}

export function UseDialog({ flowId, doc, onClose }: { flowId: string; doc: FlowDocument; onClose: () => void }) {
  const origin = window.location.origin;
  const inputs = exampleInputs(doc.inputs as Record<string, any> | undefined, loadLastInputs(flowId));
  const [versions, setVersions] = useState<VersionOut[] | null>(null);
  const [hooks, setHooks] = useState<Trigger[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.versions(flowId).then(setVersions, (e) => setError(errorText(e)));
    triggerApi.list(flowId).then(
      (ts) => setHooks(ts.filter((t) => t.kind === "webhook" && t.url)),
      () => setHooks([]),
    );
  }, [flowId]);
  const latest = versions?.length ? Math.max(...versions.map((v) => v.version)) : null;
  return (
    <Dialog title="Use this flow" onClose={onClose} testId="use-dialog" wide>
      {versions && latest === null && (
        <p className="banner" data-testid="use-unpublished">
          Nothing is published yet: these calls run the latest published version. Publish the flow first (Publish… in the toolbar).
        </p>
      )}
      {latest !== null && (
        <p className="muted" data-testid="use-version">
          These calls run the latest published version (now v{latest}); the draft you edit runs only from the editor.
        </p>
      )}
      {error && <p className="error">{error}</p>}
      <p className="muted small-text">
        Make an API key with the <code>run</code> scope on the API keys page and put it in <code>PLAIT_API_KEY</code>.
      </p>
      <CopyBlock label="curl" text={curlSnippet(origin, flowId, inputs)} testId="use-curl" />
      <CopyBlock label="Python (httpx)" text={pythonSnippet(origin, flowId, inputs)} testId="use-python" />
      <h3>Webhook</h3>
      {hooks.length ? (
        hooks.map((h) => (
          <div key={h.id}>
            <CopyBlock label="Webhook URL" text={webhookUrl(origin, h.url!)} testId={`use-webhook-${h.id}`} />
            <CopyBlock label="Call it (the secret was shown once, when the trigger was made)" text={webhookSnippet(webhookUrl(origin, h.url!), inputs)} testId={`use-webhook-curl-${h.id}`} />
          </div>
        ))
      ) : (
        <p className="muted" data-testid="use-no-webhook">
          No webhook yet: add one with Triggers… in the toolbar; its URL shows here.
        </p>
      )}
      <h3>MCP</h3>
      <p>
        Tool name: <code data-testid="use-mcp-tool">{mcpToolName(flowId)}</code>
      </p>
      <CopyBlock label="MCP server URL (streamable HTTP)" text={`${origin}/mcp`} testId="use-mcp-url" />
      <div className="buttons">
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </Dialog>
  );
}

/** The toolbar's "Use" button, with its dialog. */
export function UseButton({ flowId, doc }: { flowId: string; doc: FlowDocument | null }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" className="small" onClick={() => setOpen(true)} disabled={!doc} data-testid="use-button">
        Use
      </button>
      {open && doc && <UseDialog flowId={flowId} doc={doc} onClose={() => setOpen(false)} />}
    </>
  );
}
