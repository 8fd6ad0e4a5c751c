import { describe, expect, it } from "vitest";
import { rememberImport, takeImportNotice } from "./imported";

describe("import notices", () => {
  it("are shown once, naming the format and what was approximated", () => {
    rememberImport({ id: "a", format: "ragflow", warnings: ["ExeSQL: store SQL_URL"] });
    expect(takeImportNotice("a")).toBe("Imported from a RAGFlow agent. Check: ExeSQL: store SQL_URL");
    expect(takeImportNotice("a")).toBeNull();
  });
  it("are not kept for a plain plait import", () => {
    rememberImport({ id: "b", format: null, warnings: [] });
    expect(takeImportNotice("b")).toBeNull();
  });
});
