"""plait as an MCP server: the flow-builder toolkit on stored flows, the flow library and every
published flow as a tool, over streamable HTTP at `/mcp` (`plait.mcp.http`, mounted by the API)
and over stdio (`plait mcp`, `plait.mcp.stdio`). The tools are in `plait.mcp.server`.

A front door like `api`: it imports the service layer and below, never `api`.
"""
