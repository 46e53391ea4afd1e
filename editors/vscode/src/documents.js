// @ts-check
'use strict';
// Which documents the client sends to the server: every kind of file prefixlint reads. The
// server decides what each one is (a template, its samples file, the config, a host file with
// templates in it, an include) and answers nothing for the rest.

/**
 * The files prefixlint reads, by name, whatever language another extension gives them: the
 * file kinds of the pre-commit hook's `files:` (templates, `.prompty`, and the YAML, Python,
 * TOML, JSON, Markdown and text files templates live in).
 */
const PROMPT_FILE_EXTENSIONS = ['j2', 'jinja', 'jinja2', 'prompt', 'prompty', 'yaml', 'yml', 'py', 'toml', 'json', 'md', 'txt'];
const TEMPLATE_FILES = `**/*.{${PROMPT_FILE_EXTENSIONS.join(',')}}`;

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

module.exports = { LANGUAGES, PROMPT_FILE_EXTENSIONS, TEMPLATE_FILES, WATCHED_FILES, documentSelector };
