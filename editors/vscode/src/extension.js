// @ts-check
'use strict';
// The VS Code client: starts `prefixlint server` (found and started by server.js, the code
// the test runs too) and hands it the prompt files. Everything else is the server's.

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');
const { documentSelector, WATCHED_FILES } = require('./documents');
const { ServerNotFound, initializationOptions, launchServer } = require('./server');

/** @type {LanguageClient | undefined} */
let client;
/** @type {import('node:child_process').ChildProcess | undefined} */
let serverProcess;
/** @type {vscode.OutputChannel} */
let output;
/** Serializes starts and stops: a settings change during a start waits for it. */
let pending = Promise.resolve();

/**
 * The `prefixlint.*` settings of the workspace folder.
 * @param {vscode.WorkspaceFolder | undefined} folder
 * @returns {import('./server').Settings}
 */
function readSettings(folder) {
  const config = vscode.workspace.getConfiguration('prefixlint', folder?.uri);
  return {
    path: config.get('path'),
    interpreter: config.get('interpreter'),
    config: config.get('config'),
    tokenizer: config.get('tokenizer'),
    debounceMs: config.get('debounceMs'),
  };
}

/**
 * The Python extension's selected interpreter for `resource`, if that extension is installed.
 * @param {vscode.Uri | undefined} resource
 * @returns {Promise<string | undefined>}
 */
async function selectedInterpreter(resource) {
  const python = vscode.extensions.getExtension('ms-python.python');
  if (!python) {
    return undefined;
  }
  try {
    const api = python.isActive ? python.exports : await python.activate();
    if (api?.environments) {
      const active = api.environments.getActiveEnvironmentPath(resource);
      const resolved = await api.environments.resolveEnvironment(active);
      return resolved?.executable?.uri?.fsPath;
    }
    // Python extensions before the environments API.
    return api?.settings?.getExecutionDetails?.(resource)?.execCommand?.[0];
  } catch (error) {
    output.appendLine(`The Python extension did not say which interpreter is selected: ${error}`);
    return undefined;
  }
}

async function start() {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const root = folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined;
  const settings = readSettings(folder);
  const serverOptions = async () => {
    const interpreter = settings.interpreter ? undefined : await selectedInterpreter(folder?.uri);
    serverProcess = await launchServer(settings, { root, interpreter }, (line) =>
      output.appendLine(line),
    );
    return serverProcess;
  };
  client = new LanguageClient('prefixlint', 'prefixlint', serverOptions, {
    documentSelector: documentSelector(),
    initializationOptions: initializationOptions(settings),
    outputChannel: output,
    synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher(WATCHED_FILES) },
  });
  try {
    await client.start();
  } catch (error) {
    const message = error instanceof ServerNotFound ? error.message : `prefixlint server did not start: ${error}`;
    output.appendLine(message);
    const choice = await vscode.window.showErrorMessage(message, 'Open Settings');
    if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'prefixlint');
    }
  }
}

async function stop() {
  const running = client;
  const child = serverProcess;
  client = undefined;
  serverProcess = undefined;
  if (running) {
    try {
      await running.stop();
    } catch (error) {
      output.appendLine(`prefixlint server did not stop cleanly: ${error}`);
    }
  }
  // The client only asks it to exit; a server that did not is ended here.
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill();
  }
}

function restart() {
  pending = pending.then(stop).then(start);
  return pending;
}

/** @param {vscode.ExtensionContext} context */
async function activate(context) {
  output = vscode.window.createOutputChannel('prefixlint');
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand('prefixlint.restart', restart),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('prefixlint')) {
        restart();
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => restart()),
  );
  const python = vscode.extensions.getExtension('ms-python.python');
  if (python) {
    // A newly selected interpreter may hold another prefixlint.
    python.activate().then(
      (api) => {
        const changed = api?.environments?.onDidChangeActiveEnvironmentPath;
        if (changed) {
          context.subscriptions.push(
            changed(() => {
              if (!readSettings(vscode.workspace.workspaceFolders?.[0]).interpreter) {
                restart();
              }
            }),
          );
        }
      },
      () => undefined,
    );
  }
  pending = pending.then(start);
  await pending;
}

function deactivate() {
  pending = pending.then(stop);
  return pending;
}

module.exports = { activate, deactivate };
