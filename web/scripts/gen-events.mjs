// The web UI's run-event types, generated from the events' JSON Schema (`plait schema --events`,
// derived from the event dataclasses in src/plait/engine/events.py) with json-schema-to-typescript,
// so the browser reads the same event shapes the engine writes.
//
//   plait schema --events | node web/scripts/gen-events.mjs           writes web/src/generated/events.ts
//   plait schema --events | node web/scripts/gen-events.mjs --check   exit 1 when that file is stale
//
// `make events` and `make events-check` (part of `make lint`) run these. `--out DIR` writes or
// checks DIR/events.ts instead; `--schema FILE` reads the schema from FILE instead of stdin.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { compile } from "json-schema-to-typescript";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const REGENERATE = "make events";

const BANNER = `/* eslint-disable */
// GENERATED FILE, do not edit. Made by \`${REGENERATE}\`
// (\`plait schema --events | node web/scripts/gen-events.mjs\`) from the event dataclasses in
// src/plait/engine/events.py. \`make events-check\` (part of \`make lint\`) fails when it is stale.`;

const { values: args } = parseArgs({
  options: {
    check: { type: "boolean", default: false },
    out: { type: "string", default: join(ROOT, "web/src/generated") },
    schema: { type: "string", default: "/dev/stdin" },
  },
});

let schema;
try {
  schema = JSON.parse(readFileSync(args.schema, "utf8"));
} catch (err) {
  console.error(`gen-events: cannot read the events' JSON Schema from ${args.schema}: ${err.message}`);
  process.exit(2);
}

// A schema with only annotations (`{"description": ...}`) accepts any value, but the generator
// reads it as an object: say `unknown` explicitly.
const SHAPE = ["type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf", "not", "properties", "items", "additionalProperties"];
function markAny(node) {
  if (Array.isArray(node)) return node.forEach(markAny);
  if (!node || typeof node !== "object") return;
  for (const [key, value] of Object.entries(node)) {
    if (key === "properties" || key === "$defs") {
      for (const prop of Object.values(value)) {
        if (prop && typeof prop === "object" && !SHAPE.some((k) => k in prop)) prop.tsType = "unknown";
      }
    }
    markAny(value);
  }
}
markAny(schema);

const source = await compile(schema, schema.title ?? "RunEvent", {
  bannerComment: BANNER,
  additionalProperties: false,
  unknownAny: true,
  strictIndexSignatures: false,
  style: { printWidth: 120 },
});

const target = join(args.out, "events.ts");
const shown = relative(process.cwd(), target) || target;

if (args.check) {
  let current = null;
  try {
    current = readFileSync(target, "utf8");
  } catch {
    // missing counts as stale
  }
  if (current !== source) {
    console.error(`${shown} is stale: the event types changed. Run \`${REGENERATE}\` to regenerate it.`);
    process.exit(1);
  }
  console.log(`${shown} is up to date`);
} else {
  mkdirSync(args.out, { recursive: true });
  writeFileSync(target, source);
  console.log(`wrote ${shown}`);
}
