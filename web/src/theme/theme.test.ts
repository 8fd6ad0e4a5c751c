import { afterEach, describe, expect, it } from "vitest";
import { getTheme, nextTheme, resolveTheme, setTheme, THEME_KEY } from "./theme";

describe("theme", () => {
  afterEach(() => setTheme("system"));
  it("cycles system -> light -> dark", () => {
    expect(nextTheme("system")).toBe("light");
    expect(nextTheme("light")).toBe("dark");
    expect(nextTheme("dark")).toBe("system");
  });
  it("keeps the choice on <html> and in localStorage; system removes both", () => {
    setTheme("dark");
    expect(getTheme()).toBe("dark");
    expect(document.documentElement.getAttribute("data-theme")).toBe("dark");
    expect(localStorage.getItem(THEME_KEY)).toBe("dark");
    setTheme("system");
    expect(document.documentElement.hasAttribute("data-theme")).toBe(false);
    expect(localStorage.getItem(THEME_KEY)).toBeNull();
  });
  it("resolves system by the media query", () => {
    expect(resolveTheme("system", true)).toBe("dark");
    expect(resolveTheme("system", false)).toBe("light");
    expect(resolveTheme("light", true)).toBe("light");
  });
});
