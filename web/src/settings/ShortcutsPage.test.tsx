import { afterEach, describe, expect, it } from "vitest";
import { assistantShortcut } from "../assistant/AssistantDock";
import { mount, q, settle, type, unmount } from "../test/dom";
import ShortcutsPage from "./ShortcutsPage";

afterEach(() => {
  unmount();
  localStorage.clear();
});

describe("Settings → Shortcuts (A-T15)", () => {
  it("lists the AI Assistant's key and changes it for the canvas", async () => {
    mount(<ShortcutsPage />);
    await settle();
    expect(q("shortcut-assistant")?.textContent).toContain("AI Assistant");
    expect(q("shortcut-assistant-current")?.textContent).toBe("A");
    type("shortcut-assistant-key", "j");
    await settle();
    expect(assistantShortcut()).toBe("j");
    expect(q("shortcut-assistant-current")?.textContent).toBe("J");
  });

  it("refuses a key that is not a letter or a digit", async () => {
    mount(<ShortcutsPage />);
    type("shortcut-assistant-key", "%");
    await settle();
    expect(assistantShortcut()).toBe("a");
    expect(document.body.textContent).toContain("Use a letter or a digit.");
  });
});
