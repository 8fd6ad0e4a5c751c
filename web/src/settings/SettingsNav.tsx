/** The settings pages' tabs: Models, Variables and Shortcuts. */
import { linkProps, paths } from "../router";

export function SettingsNav({ current }: { current: "models" | "variables" | "shortcuts" }) {
  return (
    <nav className="settings-nav" aria-label="Settings">
      <a className={current === "models" ? "active" : undefined} aria-current={current === "models" ? "page" : undefined} data-testid="settings-models" {...linkProps(paths.models())}>
        Models
      </a>
      <a className={current === "variables" ? "active" : undefined} aria-current={current === "variables" ? "page" : undefined} data-testid="settings-variables" {...linkProps(paths.variables())}>
        Variables
      </a>
      <a className={current === "shortcuts" ? "active" : undefined} aria-current={current === "shortcuts" ? "page" : undefined} data-testid="settings-shortcuts" {...linkProps(paths.shortcuts())}>
        Shortcuts
      </a>
    </nav>
  );
}
