/**
 * The "Use" panel's ready-to-copy snippets: start a run of the flow's published version over the
 * HTTP API (curl, Python httpx), its webhook URL, and its name as an MCP tool. The API key is the
 * `$PLAIT_API_KEY` placeholder; the origin is the page's own.
 */

/** Example inputs from the flow's input schema: each property's default, example or a sample. */
export function exampleInputs(schema: Record<string, any> | undefined, remembered?: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = {};
  const props: Record<string, any> = schema?.properties ?? {};
  for (const [k, s] of Object.entries(props)) {
    if (remembered && k in remembered) out[k] = remembered[k];
    else if (s && "default" in s) out[k] = s.default;
    else if (Array.isArray(s?.examples) && s.examples.length) out[k] = s.examples[0];
    else if (Array.isArray(s?.enum) && s.enum.length) out[k] = s.enum[0];
    else out[k] = sample(s?.type);
  }
  return out;
}

function sample(type: any): any {
  const t = Array.isArray(type) ? type[0] : type;
  switch (t) {
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return true;
    case "array":
      return [];
    case "object":
      return {};
    default:
      return "Hello";
  }
}

/** The API route that runs the latest published version and answers with its outputs. */
export function runUrl(origin: string, flowId: string): string {
  return `${origin.replace(/\/$/, "")}/api/v1/flows/${encodeURIComponent(flowId)}/runs?version=latest`;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'"'"'`)}'`;
}

export function curlSnippet(origin: string, flowId: string, inputs: Record<string, any>): string {
  const body = JSON.stringify({ inputs });
  return [`curl -sS -X POST ${shellQuote(runUrl(origin, flowId))} \\`, `  -H "x-api-key: $PLAIT_API_KEY" \\`, `  -H 'content-type: application/json' \\`, `  -d ${shellQuote(body)}`].join("\n");
}

/** A Python literal of a JSON value (True/False/None instead of true/false/null). */
export function pyLiteral(v: any, indent = ""): string {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : "None";
  if (typeof v === "string") return JSON.stringify(v);
  const inner = indent + "    ";
  if (Array.isArray(v)) return v.length ? `[\n${v.map((x) => inner + pyLiteral(x, inner)).join(",\n")},\n${indent}]` : "[]";
  const entries = Object.entries(v);
  return entries.length ? `{\n${entries.map(([k, x]) => `${inner}${JSON.stringify(k)}: ${pyLiteral(x, inner)}`).join(",\n")},\n${indent}}` : "{}";
}

export function pythonSnippet(origin: string, flowId: string, inputs: Record<string, any>): string {
  return [
    "import os",
    "",
    "import httpx",
    "",
    "response = httpx.post(",
    `    ${JSON.stringify(runUrl(origin, flowId))},`,
    '    headers={"x-api-key": os.environ["PLAIT_API_KEY"]},',
    `    json={"inputs": ${pyLiteral(inputs, "    ")}},`,
    "    timeout=600,",
    ")",
    "response.raise_for_status()",
    'print(response.json()["outputs"])',
  ].join("\n");
}

/** A webhook trigger's delivery URL (`url` is the path the server gives, `/api/v1/hooks/...`). */
export function webhookUrl(origin: string, path: string): string {
  return `${origin.replace(/\/$/, "")}${path.startsWith("/") ? "" : "/"}${path}`;
}

export function webhookSnippet(url: string, inputs: Record<string, any>): string {
  return [`curl -sS -X POST ${shellQuote(url)} \\`, `  -H "Authorization: Bearer $PLAIT_WEBHOOK_SECRET" \\`, `  -H 'content-type: application/json' \\`, `  -d ${shellQuote(JSON.stringify(inputs))}`].join("\n");
}

/** The flow's name as a tool of plait's MCP server (`flow_` + the id, as plait.mcp.published). A
 * name shared by two flows gets a suffix there; the server's tool list has the final name. */
export function mcpToolName(flowId: string): string {
  return ("flow_" + flowId.replace(/[^A-Za-z0-9_-]/g, "_")).slice(0, 64);
}
