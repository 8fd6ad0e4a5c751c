/** The tools agents and `tool` nodes can name (GET /api/v1/tools), loaded on first use: listing
 * connects to the server-side MCP servers, so it is not fetched until a tool field is shown. */
import { useEffect, useState } from "react";
import { api } from "./api";
import type { ToolsListing } from "./types";

/** Which config fields of which node types name tools: type -> field keys. */
export const TOOL_FIELDS: Record<string, string[]> = { agent: ["tools", "force_tool"], tool: ["tool"] };

export interface ToolChoices {
  /** every ref, built-ins first: `web_search`, `mcp:<server>`, `mcp:<server>/<tool>` */
  refs: string[];
  /** ref -> description, shown as the option's label */
  labels: Record<string, string>;
  /** servers (or the config file) that could not be listed, with why */
  problems: string[];
}

/** The choices a listing offers; `withServers`: include `mcp:<server>` (all its tools). */
export function toolChoices(listing: ToolsListing, withServers = true): ToolChoices {
  const refs: string[] = [];
  const labels: Record<string, string> = {};
  const problems: string[] = [];
  for (const t of listing.tools) {
    refs.push(t.ref);
    labels[t.ref] = t.description;
  }
  for (const server of listing.mcp_servers) {
    if (server.error) problems.push(`MCP server ${server.name}: ${server.error}`);
    if (withServers && !server.error) {
      refs.push(server.ref);
      labels[server.ref] = `every tool of MCP server ${server.name}`;
    }
    for (const t of server.tools) {
      refs.push(t.ref);
      labels[t.ref] = t.description;
    }
  }
  if (listing.mcp_config_error) problems.push(listing.mcp_config_error);
  return { refs, labels, problems };
}

let cached: Promise<ToolsListing> | null = null;

/** The listing, fetched once per page load when `enabled` first becomes true. */
export function useToolListing(enabled: boolean): ToolsListing | null {
  const [listing, setListing] = useState<ToolsListing | null>(null);
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    cached ??= api.tools().catch((e) => {
      cached = null;
      throw e;
    });
    cached.then(
      (l) => live && setListing(l),
      () => undefined, // no listing: the fields stay free text
    );
    return () => {
      live = false;
    };
  }, [enabled]);
  return listing;
}
