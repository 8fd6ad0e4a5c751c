/** The header's theme switch: system -> light -> dark, remembered in this browser. */
import { nextTheme, setTheme, useResolvedTheme, useThemeChoice } from "./theme";

const ICON = { system: "◐", light: "☀", dark: "☾" } as const;
const LABEL = { system: "System theme", light: "Light theme", dark: "Dark theme" } as const;

export function ThemeToggle() {
  const choice = useThemeChoice();
  const resolved = useResolvedTheme();
  const next = nextTheme(choice);
  return (
    <button
      type="button"
      className="small theme-toggle"
      data-testid="theme-toggle"
      data-theme-choice={choice}
      data-theme-resolved={resolved}
      title={`${LABEL[choice]} (click for ${LABEL[next].toLowerCase()})`}
      aria-label={`${LABEL[choice]}; switch to ${LABEL[next].toLowerCase()}`}
      onClick={() => setTheme(next)}
    >
      <span aria-hidden="true">{ICON[choice]}</span> {choice === "system" ? "Auto" : choice === "light" ? "Light" : "Dark"}
    </button>
  );
}
