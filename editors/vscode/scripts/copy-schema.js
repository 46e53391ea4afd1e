// @ts-check
'use strict';
// `vscode:prepublish` (run by `vsce package`): the extension contributes the config schema
// at the repository's root (generated from the config types) for `prefixlint.yaml`, and a
// packaged extension can only hold files under its own folder, so it is copied here.
//
// Until the schema is generated in the repository, packaging goes on without it and says so:
// `yamlValidation` then points at a file the package does not hold (VS Code's YAML support
// ignores it). tests/heavy/vscode_extension.rs checks the copy whenever the root has the schema.

const fs = require('node:fs');
const path = require('node:path');

const source = path.resolve(__dirname, '..', '..', '..', 'prefixlint.schema.json');
const target = path.resolve(__dirname, '..', 'prefixlint.schema.json');

if (fs.existsSync(source)) {
  JSON.parse(fs.readFileSync(source, 'utf8')); // a broken schema stops the packaging
  fs.copyFileSync(source, target);
  console.log(`copied ${source}`);
} else {
  fs.rmSync(target, { force: true });
  console.warn(`warning: ${source} does not exist; the package holds no config schema`);
}
