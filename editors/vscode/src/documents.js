// @ts-check
'use strict';
// Which documents the client sends to the server: every kind of file prefixlint reads. The
// server decides what each one is (a template, its samples file, the config, a host file with
// templates in it, an include) and answers nothing for the rest.

/** Template files by name, whatever language another extension gives them. */
const TEMPLATE_FILES = '**/*.{j2,jinja,jinja2,prompt,prompty}';

/** The config and samples files, watched on disk so that a change outside the editor counts. */
const WATCHED_FILES = '**/{prefixlint.yaml,.prefixlint.yaml,*.samples.yaml}';

/**
 * Language ids: Jinja (as the Jinja extensions name it), `.prompty`, and the hosts
 * (YAML, Python, TOML, JSON) and text formats (Markdown, plain text) templates live in.
 */
const LANGUAGES = [
  'jinja',
  'jinja-html',
  'jinja-md',
  'jinja-yaml',
  'jinja-json',
  'jinja-toml',
  'jinja-py',
  'prompty',
  'yaml',
  'python',
  'toml',
  'json',
  'jsonc',
  'markdown',
  'plaintext',
];

/** The client's document selector: files on disk only (the server reads their folders). */
function documentSelector() {
  return [
    { scheme: 'file', pattern: TEMPLATE_FILES },
    ...LANGUAGES.map((language) => ({ scheme: 'file', language })),
  ];
}

module.exports = { LANGUAGES, TEMPLATE_FILES, WATCHED_FILES, documentSelector };
