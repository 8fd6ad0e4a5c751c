/**
 * Settings → Shortcuts: the canvas's keyboard shortcuts, and the one key a person may change (the
 * AI Assistant's, default A). The choice is kept in this browser, where the canvas reads it.
 */
import { useState } from "react";
import { assistantShortcut, DEFAULT_SHORTCUT, SHORTCUT_STORAGE_KEY } from "../assistant/AssistantDock";
import { writeString } from "../assistant/storage";
import { SettingsNav } from "./SettingsNav";
import "./settings.css";

const FIXED: [string, string][] = [
  ["Undo / Redo", "Ctrl+Z / Ctrl+Shift+Z"],
  ["Copy / Paste", "Ctrl+C / Ctrl+V"],
  ["Select all", "Ctrl+A"],
  ["Delete the selection", "Delete"],
  ["Close the assistant, leave a body", "Esc"],
];

export default function ShortcutsPage() {
  const [key, setKey] = useState(assistantShortcut);
  const [notice, setNotice] = useState<string | null>(null);
  const change = (value: string) => {
    const k = value.trim().slice(-1).toLowerCase();
    if (!k) return;
    if (!/^[a-z0-9]$/.test(k)) return setNotice("Use a letter or a digit.");
    writeString(SHORTCUT_STORAGE_KEY, k);
    setKey(k);
    setNotice(`The assistant now opens with ${k.toUpperCase()} on the canvas.`);
  };
  return (
    <div className="page settings-page" data-testid="shortcuts-page">
      <h1>Settings</h1>
      <SettingsNav current="shortcuts" />
      <h2>Shortcuts</h2>
      <p className="muted">Keys work on the canvas, not while you type in a field.</p>
      <table className="settings-table" data-testid="shortcuts-table">
        <tbody>
          <tr data-testid="shortcut-assistant">
            <td>AI Assistant</td>
            <td>
              <kbd data-testid="shortcut-assistant-current">{key.toUpperCase()}</kbd>{" "}
              <input
                aria-label="Type another key for the AI Assistant"
                placeholder="Type a key"
                data-testid="shortcut-assistant-key"
                value=""
                size={9}
                onChange={(e) => change(e.target.value)}
              />{" "}
              {key !== DEFAULT_SHORTCUT && (
                <button type="button" className="small" onClick={() => change(DEFAULT_SHORTCUT)}>
                  Back to A
                </button>
              )}
            </td>
          </tr>
          {FIXED.map(([what, keys]) => (
            <tr key={what}>
              <td>{what}</td>
              <td>
                <kbd>{keys}</kbd>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {notice && (
        <p role="status" data-testid="shortcuts-notice">
          {notice}
        </p>
      )}
    </div>
  );
}
