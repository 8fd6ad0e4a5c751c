#!/usr/bin/env node
// The initial JavaScript of the built UI, gzipped, against the budget: the entry chunk and
// everything index.html loads or modulepreloads (read from the built index.html), and, recursively,
// the chunks those import statically. Lazy chunks (dynamic import(): CodeMirror, dagre, markdown...)
// are listed apart and not counted: they load when a screen needs them.
// Usage: node scripts/size.mjs [--dist DIR] [--json] [--max KB]
// Exit 1 over the budget, 2 without a build.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const dist = resolve(opt("--dist") ?? join(here, "..", "..", "src", "plait", "web_dist"));
const budgetKb = Number(opt("--max") ?? 600);

function walk(dir) {
  let out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out = out.concat(walk(p));
    else out.push(p);
  }
  return out;
}

const indexPath = join(dist, "index.html");
if (!existsSync(indexPath)) {
  console.error(`no build in ${dist}: run \`npm run build\` in web/ (or pass --dist DIR)`);
  process.exit(2);
}
const html = readFileSync(indexPath, "utf8");
const all = walk(dist).filter((f) => /\.m?js$/.test(f));
const rel = (f) => relative(dist, f).split("\\").join("/");

// what index.html names: <script type="module" src> and <link rel="modulepreload" href>
const named = new Set();
for (const m of html.matchAll(/<(?:script|link)\b[^>]*?(?:src|href)="([^"]+\.m?js)"[^>]*>/g)) {
  const tag = m[0];
  if (tag.startsWith("<link") && !/rel="modulepreload"/.test(tag)) continue;
  named.add(m[1].replace(/^\.?\//, "").replace(/^\//, ""));
}

// static imports inside the initial chunks are initial too (`import ... from "./x.js"`, `import "./x.js"`)
const initial = new Set();
const queue = [...named].map((n) => join(dist, n)).filter((f) => existsSync(f));
while (queue.length) {
  const f = queue.pop();
  if (initial.has(f)) continue;
  initial.add(f);
  const code = readFileSync(f, "utf8");
  for (const m of code.matchAll(/(?:^|[;\n}])\s*import\s*(?:[\w*{}\s,$]+from\s*)?["']([^"']+\.m?js)["']/g)) {
    const target = resolve(dirname(f), m[1]);
    if (existsSync(target) && !initial.has(target)) queue.push(target);
  }
}

const row = (f) => {
  const raw = readFileSync(f);
  return { file: rel(f), bytes: raw.length, gzip: gzipSync(raw, { level: 9 }).length };
};
const initialRows = [...initial].map(row).sort((a, b) => b.gzip - a.gzip);
const lazyRows = all.filter((f) => !initial.has(f)).map(row).sort((a, b) => b.gzip - a.gzip);
const sum = (rows) => rows.reduce((s, r) => s + r.gzip, 0);
const total = sum(initialRows);
const result = {
  dist,
  initial: initialRows,
  lazy: lazyRows,
  initial_gzip_bytes: total,
  initial_gzip_kb: +(total / 1024).toFixed(1),
  lazy_gzip_kb: +(sum(lazyRows) / 1024).toFixed(1),
  budget_kb: budgetKb,
  ok: initialRows.length > 0 && total <= budgetKb * 1024,
};
if (args.includes("--json")) console.log(JSON.stringify(result));
else {
  const kb = (n) => `${(n / 1024).toFixed(1).padStart(8)} kB gz`;
  console.log("initial JavaScript (index.html, its modulepreloads and their static imports):");
  for (const r of initialRows) console.log(`${kb(r.gzip)}  ${r.file}`);
  console.log("lazy chunks (loaded on demand, not counted):");
  for (const r of lazyRows) console.log(`${kb(r.gzip)}  ${r.file}`);
  if (!lazyRows.length) console.log("        (none)");
  console.log(`${result.initial_gzip_kb} kB gzipped initial JavaScript (budget ${budgetKb} kB; lazy ${result.lazy_gzip_kb} kB): ${result.ok ? "ok" : "OVER BUDGET"}`);
}
process.exit(result.ok ? 0 : 1);
