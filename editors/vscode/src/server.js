// @ts-check
'use strict';
// Finding and starting `prefixlint server`. This module does not import `vscode`: the
// extension (extension.js) and its test (test/server.test.js) run the same code, so the test
// starts the server exactly as VS Code does.

const childProcess = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const COMMAND = process.platform === 'win32' ? 'prefixlint.exe' : 'prefixlint';

/** The server's default debounce (ms), as `prefixlint server` has it. */
const DEFAULT_DEBOUNCE_MS = 300;

/** How long the interpreter may take to say where its scripts go. */
const INTERPRETER_TIMEOUT_MS = 15000;

// Prints where pip puts an installed wheel's commands for this interpreter: its environment's
// scripts folder, then the user scheme's (`pip install --user`).
const SCRIPTS_QUERY = `
import json, os, sysconfig
def user_scripts():
    try:
        scheme = sysconfig.get_preferred_scheme("user")
    except AttributeError:
        scheme = os.name + "_user"
    try:
        return sysconfig.get_path("scripts", scheme)
    except KeyError:
        return None
print(json.dumps([sysconfig.get_path("scripts"), user_scripts()]))
`;

/**
 * The extension's settings (`prefixlint.*`), as the server is started with them.
 * @typedef {object} Settings
 * @property {string} [path] `prefixlint.path`: the executable, used as given.
 * @property {string} [interpreter] `prefixlint.interpreter`, else the Python extension's
 *   selected interpreter: the environment whose `prefixlint` command (the wheel's) runs.
 * @property {string} [config] `prefixlint.config`: `--config FILE`.
 * @property {string} [tokenizer] `prefixlint.tokenizer`: `--tokenizer SPEC`.
 * @property {number} [debounceMs] `prefixlint.debounceMs`: `initializationOptions.debounceMs`.
 */

/**
 * @typedef {object} Found
 * @property {string} command the executable's absolute path
 * @property {'setting' | 'interpreter' | 'PATH'} from where it was found
 */

class ServerNotFound extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'ServerNotFound';
  }
}

/** @param {string} file */
function isExecutable(file) {
  try {
    if (!fs.statSync(file).isFile()) {
      return false;
    }
    if (process.platform !== 'win32') {
      fs.accessSync(file, fs.constants.X_OK);
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * A path from a setting: `~` and `${workspaceFolder}` expanded, relative to the workspace.
 * @param {string} value
 * @param {string | undefined} root
 */
function expandPath(value, root) {
  let expanded = value.trim();
  if (expanded === '~' || expanded.startsWith('~/') || expanded.startsWith('~\\')) {
    expanded = path.join(os.homedir(), expanded.slice(1));
  }
  expanded = expanded.replace(/\$\{userHome\}/g, os.homedir());
  if (root !== undefined) {
    expanded = expanded.replace(/\$\{workspaceFolder\}/g, root);
  }
  return path.resolve(root ?? process.cwd(), expanded);
}

/**
 * The folders where the interpreter's environment holds installed commands: beside the
 * interpreter (a virtual environment's `bin/` or `Scripts/`), then what its `sysconfig`
 * says (the environment's scripts folder, the user scheme's).
 * @param {string} interpreter
 * @param {NodeJS.ProcessEnv} env
 * @returns {Promise<string[]>}
 */
function scriptsFolders(interpreter, env) {
  const beside = path.dirname(interpreter);
  return new Promise((resolve) => {
    childProcess.execFile(
      interpreter,
      ['-I', '-c', SCRIPTS_QUERY],
      { env, timeout: INTERPRETER_TIMEOUT_MS, windowsHide: true },
      (error, stdout) => {
        /** @type {string[]} */
        let asked = [];
        if (!error) {
          try {
            asked = JSON.parse(stdout).filter((/** @type {unknown} */ p) => typeof p === 'string');
          } catch {
            asked = [];
          }
        }
        resolve([...new Set([beside, ...asked])]);
      },
    );
  });
}

/**
 * The executable named `name` on `PATH` (with `PATHEXT` on Windows).
 * @param {NodeJS.ProcessEnv} env
 */
function onPath(env) {
  const folders = (env.PATH ?? env.Path ?? '').split(path.delimiter).filter(Boolean);
  const names =
    process.platform === 'win32'
      ? (env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';').map((ext) => `prefixlint${ext.toLowerCase()}`)
      : [COMMAND];
  for (const folder of folders) {
    for (const name of names) {
      const candidate = path.join(folder, name);
      if (isExecutable(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

/**
 * Finds `prefixlint`: the `prefixlint.path` setting when it is set (and then only it), else
 * the wheel's command in the interpreter's environment, else the `PATH`.
 * @param {Settings} settings
 * @param {{root?: string, interpreter?: string, env?: NodeJS.ProcessEnv}} where `root`: the
 *   workspace folder; `interpreter`: the selected Python, when the setting names none.
 * @returns {Promise<Found>}
 */
async function findServer(settings, where = {}) {
  const env = where.env ?? process.env;
  if (settings.path && settings.path.trim()) {
    const command = expandPath(settings.path, where.root);
    if (!isExecutable(command)) {
      throw new ServerNotFound(
        `prefixlint.path is set to ${settings.path}, but ${command} is not an executable file.`,
      );
    }
    return { command, from: 'setting' };
  }
  const interpreter = settings.interpreter?.trim()
    ? expandPath(settings.interpreter, where.root)
    : where.interpreter;
  /** @type {string[]} */
  let searched = [];
  if (interpreter) {
    searched = await scriptsFolders(interpreter, env);
    for (const folder of searched) {
      const candidate = path.join(folder, COMMAND);
      if (isExecutable(candidate)) {
        return { command: candidate, from: 'interpreter' };
      }
    }
  }
  const command = onPath(env);
  if (command) {
    return { command, from: 'PATH' };
  }
  const looked = interpreter
    ? `the environment of ${interpreter} (${searched.join(', ')}) or the PATH`
    : 'the PATH (no Python interpreter is selected)';
  throw new ServerNotFound(
    `prefixlint was not found in ${looked}. Install it into the selected interpreter's ` +
      'environment (pip install prefixlint), put it on the PATH, or set prefixlint.path.',
  );
}

/**
 * The command line `prefixlint server` runs with: the settings as its flags.
 * @param {string} command
 * @param {Settings} settings
 * @param {string | undefined} root the workspace folder, the server's working directory
 * @returns {{command: string, args: string[], options: {cwd: string, env: NodeJS.ProcessEnv}}}
 */
function serverCommand(command, settings, root, env = process.env) {
  const args = ['server'];
  if (settings.config && settings.config.trim()) {
    args.push('--config', expandPath(settings.config, root));
  }
  if (settings.tokenizer && settings.tokenizer.trim()) {
    args.push('--tokenizer', settings.tokenizer.trim());
  }
  return { command, args, options: { cwd: root ?? os.homedir(), env } };
}

/**
 * What the client sends in `initialize`'s `initializationOptions`.
 * @param {Settings} settings
 */
function initializationOptions(settings) {
  const ms = settings.debounceMs;
  return {
    debounceMs: typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 ? Math.round(ms) : DEFAULT_DEBOUNCE_MS,
  };
}

/**
 * Starts the server with its stdio piped (the LSP transport); resolves once it runs.
 * @param {ReturnType<typeof serverCommand>} invocation
 * @returns {Promise<import('node:child_process').ChildProcessWithoutNullStreams>}
 */
function startServer(invocation) {
  return new Promise((resolve, reject) => {
    const child = childProcess.spawn(invocation.command, invocation.args, {
      ...invocation.options,
      stdio: 'pipe',
      windowsHide: true,
    });
    child.once('error', reject);
    child.once('spawn', () => {
      child.off('error', reject);
      resolve(child);
    });
  });
}

/**
 * What the extension does to start its server: find `prefixlint`, build its command line from
 * the settings, start it. The test calls this too.
 * @param {Settings} settings
 * @param {{root?: string, interpreter?: string, env?: NodeJS.ProcessEnv}} where as for findServer
 * @param {(line: string) => void} [log]
 */
async function launchServer(settings, where = {}, log = () => undefined) {
  const found = await findServer(settings, where);
  const invocation = serverCommand(found.command, settings, where.root, where.env ?? process.env);
  log(`Starting ${invocation.command} ${invocation.args.join(' ')} (found by ${found.from})`);
  return startServer(invocation);
}

module.exports = {
  DEFAULT_DEBOUNCE_MS,
  ServerNotFound,
  findServer,
  initializationOptions,
  launchServer,
  serverCommand,
  startServer,
};
