// @ts-check
'use strict';
// The extension's client code against the real `prefixlint server`, where no VS Code binary
// can be fetched: src/server.js finds and starts the server exactly as the extension does, and
// the language client's protocol (vscode-languageserver-protocol, which vscode-languageclient
// speaks) drives it over the child's stdio. PREFIXLINT_TEST_BINARY names the binary under test
// (tests/heavy/vscode_extension.rs sets it).

const assert = require('node:assert/strict');
const childProcess = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { test } = require('node:test');
const { pathToFileURL } = require('node:url');
const {
  createProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
  DidChangeTextDocumentNotification,
  DidOpenTextDocumentNotification,
  ExitNotification,
  InitializeRequest,
  InitializedNotification,
  PublishDiagnosticsNotification,
  ShutdownRequest,
} = require('vscode-languageserver-protocol/node');
const { LANGUAGES, PROMPT_FILE_EXTENSIONS } = require('../src/documents');
const {
  ServerNotFound,
  findServer,
  initializationOptions,
  launchServer,
} = require('../src/server');

const BINARY = process.env.PREFIXLINT_TEST_BINARY;
assert.ok(
  BINARY && fs.existsSync(BINARY),
  'PREFIXLINT_TEST_BINARY must name the prefixlint binary (cargo test --test heavy vscode_extension sets it)',
);

/** Long enough for a loaded CI machine; the test never depends on it being short. */
const WAIT_MS = 120_000;

const STABLE =
  'You are a careful research assistant. You answer questions about the documents the user ' +
  'provides, cite the passages you rely on, and say when the documents do not answer the question.\n';
const CLOCK = 'Current time: {{ now }}\n';
const QUESTION = 'Question: {{ question }}\n';
/** A template whose first line is a clock value, before plenty of stable text. */
const CLOCK_FIRST = CLOCK + STABLE.repeat(4) + QUESTION;
/** The same template with the clock moved to the end: nothing to report. */
const CLOCK_LAST = STABLE.repeat(4) + QUESTION + CLOCK;

function tempDir() {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'prefixlint-vscode-')));
}

/** A folder holding `prefixlint` (a link to the binary under test), as a wheel's bin/ would. */
function folderWithBinary(parent, name) {
  const folder = path.join(parent, name);
  fs.mkdirSync(folder, { recursive: true });
  fs.symlinkSync(BINARY, path.join(folder, 'prefixlint'));
  return folder;
}

test('finds prefixlint by the setting, in the interpreter environment, else on the PATH', async () => {
  const dir = tempDir();
  try {
    const onPath = folderWithBinary(dir, 'on-path');
    const env = { PATH: onPath };
    // A real virtual environment whose bin/ holds the command, as `pip install prefixlint` leaves it.
    const venv = path.join(dir, 'venv');
    childProcess.execFileSync('python3', ['-m', 'venv', '--without-pip', venv]);
    fs.symlinkSync(BINARY, path.join(venv, 'bin', 'prefixlint'));
    const python = path.join(venv, 'bin', 'python');

    assert.deepEqual(await findServer({}, { interpreter: python, env }), {
      command: path.join(venv, 'bin', 'prefixlint'),
      from: 'interpreter',
    });
    // `prefixlint.interpreter` is the same, relative to the workspace folder.
    assert.deepEqual(await findServer({ interpreter: 'venv/bin/python' }, { root: dir, env }), {
      command: path.join(venv, 'bin', 'prefixlint'),
      from: 'interpreter',
    });
    // `pip install --user`: the user scheme's scripts folder, as the interpreter's sysconfig
    // names it (under HOME), not beside the interpreter.
    const python3 = (/** @type {string} */ code, /** @type {object} */ options = {}) =>
      childProcess.execFileSync('python3', ['-I', '-c', code], { encoding: 'utf8', ...options }).trim();
    // The real interpreter, not a virtual environment's link to it.
    const system = fs.realpathSync(python3('import sys; print(sys.executable)'));
    const userScripts = python3(
      'import os, sysconfig; print(sysconfig.get_path("scripts", os.name + "_user"))',
      { env: { HOME: dir, PATH: process.env.PATH } },
    );
    assert.ok(userScripts.startsWith(dir), userScripts);
    fs.mkdirSync(userScripts, { recursive: true });
    fs.symlinkSync(BINARY, path.join(userScripts, 'prefixlint'));
    assert.deepEqual(await findServer({}, { interpreter: system, env: { ...env, HOME: dir } }), {
      command: path.join(userScripts, 'prefixlint'),
      from: 'interpreter',
    });
    // An interpreter without it: the PATH.
    const bare = path.join(dir, 'bare');
    childProcess.execFileSync('python3', ['-m', 'venv', '--without-pip', bare]);
    assert.deepEqual(await findServer({}, { interpreter: path.join(bare, 'bin', 'python'), env }), {
      command: path.join(onPath, 'prefixlint'),
      from: 'PATH',
    });
    // The setting wins, and only it counts: a wrong one is an error, not a fallback.
    const chosen = folderWithBinary(dir, 'chosen');
    assert.deepEqual(
      await findServer({ path: '${workspaceFolder}/chosen/prefixlint' }, { root: dir, interpreter: python, env }),
      { command: path.join(chosen, 'prefixlint'), from: 'setting' },
    );
    await assert.rejects(findServer({ path: 'missing/prefixlint' }, { root: dir, env }), (error) => {
      assert.ok(error instanceof ServerNotFound);
      assert.match(error.message, /prefixlint\.path is set to missing\/prefixlint/);
      return true;
    });
    await assert.rejects(findServer({}, { env: { PATH: path.join(dir, 'empty') } }), (error) => {
      assert.ok(error instanceof ServerNotFound);
      assert.match(error.message, /pip install prefixlint/);
      return true;
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('every language the client sends is one the extension activates on', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
  for (const language of LANGUAGES) {
    assert.ok(manifest.activationEvents.includes(`onLanguage:${language}`), language);
  }
});

test('the client sends the file kinds the pre-commit hook checks', () => {
  const hooks = fs.readFileSync(path.join(__dirname, '..', '..', '..', '.pre-commit-hooks.yaml'), 'utf8');
  const files = [...hooks.matchAll(/^\s*files:\s*'(.*)'\s*$/gm)].map((match) => match[1]);
  assert.ok(files.length > 0, 'no files: in .pre-commit-hooks.yaml');
  for (const pattern of files) {
    const hookFiles = new RegExp(pattern);
    for (const extension of PROMPT_FILE_EXTENSIONS) {
      assert.ok(hookFiles.test(`prompt.${extension}`), `${extension} is not in the hook's ${pattern}`);
    }
    // Every alternative of the hook's pattern, spelled out: `ya?ml` is yaml and yml.
    const alternatives = /** @type {RegExpMatchArray} */ (pattern.match(/\\\.\((.*)\)\$$/))[1]
      .split('|')
      .flatMap((alternative) => (alternative === 'ya?ml' ? ['yaml', 'yml'] : [alternative]));
    assert.deepEqual([...alternatives].sort(), [...PROMPT_FILE_EXTENSIONS].sort());
  }
});

/**
 * The diagnostics the server publishes for `uri`, one list per notification, in order.
 * @param {import('vscode-languageserver-protocol/node').ProtocolConnection} connection
 * @param {string} uri
 */
function diagnosticsOf(connection, uri) {
  /** @type {any[][]} */
  const received = [];
  /** @type {(() => void)[]} */
  const waiting = [];
  connection.onNotification(PublishDiagnosticsNotification.type, (params) => {
    if (params.uri === uri) {
      received.push(params.diagnostics);
      waiting.splice(0).forEach((wake) => wake());
    }
  });
  /** The next published list that `accept` takes (earlier ones are passed over). */
  return async function next(/** @type {(d: any[]) => boolean} */ accept) {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      while (received.length) {
        const diagnostics = /** @type {any[]} */ (received.shift());
        if (accept(diagnostics)) {
          return diagnostics;
        }
      }
      const left = deadline - Date.now();
      assert.ok(left > 0, `no diagnostics as expected for ${uri} in ${WAIT_MS} ms`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        waiting.push(() => {
          clearTimeout(timer);
          resolve(undefined);
        });
      });
    }
  };
}

test('the server the extension starts reports PL001 at the clock of an unsaved template, and clears it', async () => {
  const root = tempDir();
  try {
    // On disk the clock is last; the editor's unsaved buffer has it first.
    const template = path.join(root, 'prompt.j2');
    fs.writeFileSync(template, CLOCK_LAST);
    const uri = pathToFileURL(template).href;
    const settings = { path: BINARY, debounceMs: 50 };
    const env = { ...process.env, PREFIXLINT_NO_CACHE: '1' };
    /** @type {string[]} */
    const log = [];
    const child = await launchServer(settings, { root, env }, (line) => log.push(line));
    assert.deepEqual(log, [`Starting ${BINARY} server (found by setting)`]);
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    // What vscode-languageclient/node does with the child a server-options function returns.
    const connection = createProtocolConnection(
      new StreamMessageReader(child.stdout),
      new StreamMessageWriter(child.stdin),
    );
    const next = diagnosticsOf(connection, uri);
    connection.listen();

    const init = await connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: pathToFileURL(root).href,
      workspaceFolders: [{ uri: pathToFileURL(root).href, name: 'root' }],
      capabilities: { textDocument: { publishDiagnostics: { relatedInformation: true } } },
      initializationOptions: initializationOptions(settings),
    });
    assert.equal(init.serverInfo?.name, 'prefixlint');
    await connection.sendNotification(InitializedNotification.type, {});
    await connection.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri, languageId: 'jinja', version: 1, text: CLOCK_FIRST },
    });
    const found = await next((d) => d.length > 0);

    // The finding `prefixlint check --format json` reports for the same text, at the same place.
    const cli = path.join(root, 'cli');
    fs.mkdirSync(cli);
    fs.writeFileSync(path.join(cli, 'prompt.j2'), CLOCK_FIRST);
    const check = childProcess.spawnSync(BINARY, ['check', '--format', 'json', 'prompt.j2'], {
      cwd: cli,
      env: { ...env, NO_COLOR: '1' },
      encoding: 'utf8',
    });
    assert.equal(check.status, 1, check.stderr);
    const finding = JSON.parse(check.stdout).templates[0].diagnostics[0];
    assert.equal(finding.rule, 'PL001');

    assert.deepEqual(
      found.map((d) => d.code),
      ['PL001'],
      JSON.stringify(found),
    );
    const clock = CLOCK.indexOf('{{ now }}');
    assert.deepEqual(found[0].range, {
      start: { line: 0, character: clock },
      end: { line: 0, character: clock + '{{ now }}'.length },
    });
    assert.deepEqual(found[0].range, {
      start: { line: finding.line - 1, character: finding.column - 1 },
      end: { line: finding.end_line - 1, character: finding.end_column - 1 },
    });
    assert.equal(found[0].severity, 1, "LSP's Error");
    assert.ok(found[0].message.startsWith(finding.message), found[0].message);
    assert.equal(found[0].codeDescription?.href, finding.url);

    // An unsaved edit that moves the clock to the end clears it.
    await connection.sendNotification(DidChangeTextDocumentNotification.type, {
      textDocument: { uri, version: 2 },
      contentChanges: [{ text: CLOCK_LAST }],
    });
    await next((d) => d.length === 0);

    await connection.sendRequest(ShutdownRequest.type);
    await connection.sendNotification(ExitNotification.type);
    assert.equal(await exited, 0, stderr);
    connection.dispose();
    // The editor never saved: the file on disk is as it was.
    assert.equal(fs.readFileSync(template, 'utf8'), CLOCK_LAST);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
