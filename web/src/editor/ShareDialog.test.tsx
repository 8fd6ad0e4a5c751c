import { afterEach, describe, expect, it } from "vitest";
import { click, fakeServer, mount, q, settle, type, unmount } from "../test/dom";
import { ShareDialog } from "./ShareDialog";

const realFetch = globalThis.fetch;
afterEach(() => {
  unmount();
  globalThis.fetch = realFetch;
});

const users = [
  { id: "u1", email: "ada@x.io", name: "Ada", role: "admin", disabled: false, created_at: 0 },
  { id: "u2", email: "bo@x.io", name: "Bo", role: "editor", disabled: false, created_at: 0 },
];

describe("share dialog", () => {
  it("an admin shares by picking an email (sent as the user's id), changes the role and removes", async () => {
    let shares: any[] = [];
    const calls = fakeServer({
      "GET /api/v1/flows/f/shares": () => [200, shares],
      "GET /api/v1/users": [200, users],
      "PUT /api/v1/flows/f/shares/u2": (init) => {
        const s = { user_id: "u2", email: "bo@x.io", name: "Bo", role: JSON.parse(String(init.body)).role };
        shares = [s];
        return [200, s];
      },
      "DELETE /api/v1/flows/f/shares/u2": [204, undefined],
    });
    mount(<ShareDialog flowId="f" flowName="F" isAdmin ownerId="u1" onClose={() => undefined} />);
    await settle();
    expect(q("shares-empty")).not.toBeNull();
    // the owner is not offered
    expect([...document.querySelectorAll("datalist option")].map((o) => (o as HTMLOptionElement).value)).toEqual(["bo@x.io"]);
    type("share-who", "Bo@X.io");
    await click("share-add");
    expect(q("share-bo@x.io")).not.toBeNull();
    type("share-role-bo@x.io", "editor");
    await settle();
    expect(calls.filter((c) => c.method === "PUT").map((c) => c.body.role)).toEqual(["viewer", "editor"]);
    await click("share-remove-bo@x.io");
    expect(q("share-bo@x.io")).toBeNull();
  });

  it("others type an email; an unknown one is a clear message", async () => {
    const calls = fakeServer({ "GET /api/v1/flows/f/shares": [200, []] });
    mount(<ShareDialog flowId="f" flowName="F" isAdmin={false} onClose={() => undefined} />);
    await settle();
    type("share-who", "zed@x.io");
    await click("share-add");
    expect(calls.map((c) => c.path)).not.toContain("/api/v1/users");
    expect(calls.at(-1)).toMatchObject({ method: "PUT", path: "/api/v1/flows/f/shares/zed%40x.io" });
    expect(q("share-error")?.textContent).toBe("No user zed@x.io.");
  });
});
