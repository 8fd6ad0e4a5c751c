#!/usr/bin/env node
// Gzipped size of the built UI's JavaScript (all chunks) against the budget of the issue.
// Usage: node scripts/size.mjs [--json] [--max KB]; exit 1 when over the budget, 2 without a build.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "..", "src", "plait", "web_dist");
const args = process.argv.slice(2);
const maxIdx = args.indexOf("--max");
const budgetKb = maxIdx >= 0 ? Number(args[maxIdx + 1]) : 600;

function walk(dir) {
  let out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out = out.concat(walk(p));
    else out.push(p);
  }
  return out;
}

let files;
try {
  files = walk(dist).filter((f) => /\.(m?js)$/.test(f));
} catch {
  console.error(`no build in ${dist}: run \`npm run build\` in web/`);
  process.exit(2);
}
const rows = files.map((f) => {
  const raw = readFileSync(f);
  return { file: f.slice(dist.length + 1), bytes: raw.length, gzip: gzipSync(raw, { level: 9 }).length };
});
const total = rows.reduce((s, r) => s + r.gzip, 0);
const result = { files: rows, total_gzip_bytes: total, total_gzip_kb: +(total / 1024).toFixed(1), budget_kb: budgetKb, ok: total <= budgetKb * 1024 };
if (args.includes("--json")) console.log(JSON.stringify(result));
else {
  for (const r of rows) console.log(`${(r.gzip / 1024).toFixed(1).padStart(8)} kB gz  ${r.file}`);
  console.log(`${result.total_gzip_kb} kB gzipped JavaScript (budget ${budgetKb} kB): ${result.ok ? "ok" : "OVER BUDGET"}`);
}
process.exit(result.ok ? 0 : 1);
