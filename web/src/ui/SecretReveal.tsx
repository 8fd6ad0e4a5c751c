/** A secret shown once (a new API key): read-only field, copy button, and the warning that it will
 * not be shown again (the server keeps only a hash). */
import { useRef, useState } from "react";

async function copyText(text: string, field: HTMLInputElement | null): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // no clipboard API (an insecure origin, a denied permission): select and copy the old way
    field?.select();
    try {
      return document.execCommand("copy");
    } catch {
      return false;
    }
  }
}

export function SecretReveal({ label, value, testId }: { label: string; value: string; testId?: string }) {
  const ref = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<null | boolean>(null);
  return (
    <div className="secret-reveal" data-testid={testId}>
      <p className="banner waiting" role="alert">
        Copy it now: <strong>you will not see this key again.</strong> plait keeps only a hash of it.
      </p>
      <label htmlFor="secret-reveal-value">{label}</label>
      <div className="secret">
        <input id="secret-reveal-value" ref={ref} readOnly value={value} data-testid="secret-value" onFocus={(e) => e.target.select()} className="mono" />
        <button type="button" data-testid="secret-copy" onClick={async () => setCopied(await copyText(value, ref.current))}>
          Copy
        </button>
      </div>
      {copied !== null && (
        <p role="status" className={copied ? "notice" : "error"} data-testid="secret-copied">
          {copied ? "Copied to the clipboard." : "Could not copy: select the key and copy it by hand."}
        </p>
      )}
    </div>
  );
}
