/** The commands the input understands, listed under it while the text starts with "/". */

export const SLASH_COMMANDS: { command: string; text: string }[] = [
  { command: "/skip-all", text: "apply plans, flows and components without asking (send it again to turn it off)" },
];

export function slashMatches(text: string): { command: string; text: string }[] {
  const t = text.trimStart();
  if (!t.startsWith("/") || t.includes("\n")) return [];
  const word = t.split(/\s/)[0].toLowerCase();
  return SLASH_COMMANDS.filter((c) => c.command.startsWith(word));
}

export function SlashHints({ text, onPick }: { text: string; onPick: (command: string) => void }) {
  const items = slashMatches(text);
  if (!items.length) return null;
  return (
    <ul className="assistant-popover assistant-slash" data-testid="assistant-slash-hints" aria-label="Commands">
      {items.map((c) => (
        <li key={c.command} onMouseDown={(e) => e.preventDefault()} onClick={() => onPick(c.command)}>
          <code>{c.command}</code>
          <span className="assistant-muted">{c.text}</span>
        </li>
      ))}
    </ul>
  );
}
