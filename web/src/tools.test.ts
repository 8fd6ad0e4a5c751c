import { describe, expect, it } from "vitest";
import { toolChoices } from "./tools";

const listing = {
  tools: [{ name: "web_search", ref: "web_search", description: "Search the web", source: "builtin" }],
  mcp_servers: [
    { name: "calc", ref: "mcp:calc", transport: "stdio", tools: [{ name: "add", ref: "mcp:calc/add", description: "Add", source: "mcp:calc" }], error: null },
    { name: "gone", ref: "mcp:gone", transport: "http", tools: [], error: "cannot connect to http://127.0.0.1:9/mcp" },
  ],
  mcp_config_error: null,
};

describe("toolChoices", () => {
  it("lists built-ins, then each reachable server and its tools, and says which could not be listed", () => {
    const all = toolChoices(listing);
    expect(all.refs).toEqual(["web_search", "mcp:calc", "mcp:calc/add"]);
    expect(all.labels["mcp:calc/add"]).toBe("Add");
    expect(all.problems).toEqual(["MCP server gone: cannot connect to http://127.0.0.1:9/mcp"]);
    expect(toolChoices(listing, false).refs).toEqual(["web_search", "mcp:calc/add"]);
    expect(toolChoices({ ...listing, mcp_servers: [], mcp_config_error: "cannot read PLAIT_MCP_CONFIG" }).problems).toEqual([
      "cannot read PLAIT_MCP_CONFIG",
    ]);
  });
});
