#!/usr/bin/env python3
"""Renders every prompt template of the corpus with real Python Jinja2, as the frameworks do.

Confirms that the corpus is valid Jinja2 that an application would render: each prompt of
expected.yaml is rendered with `jinja2.Environment(loader=FileSystemLoader([...]))` and the
default lenient `Undefined`, using the hand-made context of contexts.yaml, and with each
render of the samples file beside it, if any. The application's
own filters and globals (`lemmatize`, `now`, `strftime_now`) are registered here, as the
application would register them.

    /work/main/.venv/bin/python tests/corpus/jinja2_check.py

Prints one line per template and a summary; exits 1 when a template fails or has no context.
"""

import datetime
import sys
from pathlib import Path

import jinja2
import jinja2.meta
import yaml
from jinja2 import nodes
from jinja2.ext import Extension

CORPUS = Path(__file__).resolve().parent
# The folders that hold prompt roots, as each framework configures its loader.
PROMPT_ROOTS = {"codegen": ["codegen/core/prompts"]}


class AppObject:
    """An application object built from a mapping: keys become attributes, and a key written
    `name()` becomes a method returning its value."""

    def __init__(self, mapping):
        for key, value in mapping.items():
            if key.endswith("()"):
                setattr(self, key[:-2], (lambda v: lambda *args, **kwargs: v)(wrap(value)))
            else:
                setattr(self, key, wrap(value))

    def __iter__(self):
        return iter(vars(self))


def wrap(value):
    """Mappings with a method key become AppObjects; other mappings stay dicts (their
    `.items()` and attribute access both work in Jinja2)."""
    if isinstance(value, dict):
        if any(str(k).endswith("()") for k in value):
            return AppObject(value)
        return {k: wrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


class ChatExtension(Extension):
    """The application's `{% chat role="..." %}...{% endchat %}` tag: one chat message."""

    tags = {"chat"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        parser.stream.expect("name:role")
        parser.stream.expect("assign")
        role = parser.parse_expression()
        body = parser.parse_statements(("name:endchat",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_message", [role]), [], [], body).set_lineno(lineno)

    def _message(self, role, caller):
        return f"<|{role}|>\n{caller().strip()}\n"


def lemmatize(text):
    """A crude stand-in for the application's lemmatizer: lowercases and drops plural s."""
    return " ".join(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in str(text).lower().split())


def environment(repo):
    roots = [CORPUS / r for r in PROMPT_ROOTS.get(repo, [])] + [CORPUS]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(r) for r in roots]), extensions=[ChatExtension]
    )
    env.filters["lemmatize"] = lemmatize
    fixed_now = datetime.datetime(2026, 3, 14, 9, 26, 53)
    env.globals["now"] = lambda: fixed_now
    env.globals["strftime_now"] = lambda fmt: fixed_now.strftime(fmt)
    return env


def samples_file(template):
    """`dir/NAME.samples.yaml` beside `dir/NAME.ext` (the first extension is dropped)."""
    return template.with_name(template.name.split(".")[0] + ".samples.yaml")


def template_name(path, repo):
    for root in PROMPT_ROOTS.get(repo, []):
        if path.startswith(root + "/"):
            return path[len(root) + 1 :]
    return path


def main():
    expected = yaml.safe_load((CORPUS / "expected.yaml").read_text())["files"]
    contexts = yaml.safe_load((CORPUS / "contexts.yaml").read_text())
    rendered, failed = 0, []
    for path, spec in sorted(expected.items()):
        if spec["status"] == "skipped":
            continue
        repo = path.split("/")[0]
        env = environment(repo)
        if path not in contexts:
            failed.append((path, "no context in contexts.yaml"))
            print(f"FAIL {path}: no context in contexts.yaml")
            continue
        context = wrap(contexts[path] or {})
        try:
            name = template_name(path, repo)
            source = env.loader.get_source(env, name)[0]
            used = jinja2.meta.find_undeclared_variables(env.parse(source))
            output = env.get_template(name).render(**context)
        except Exception as e:  # any failure is a finding of this check
            failed.append((path, f"{type(e).__name__}: {e}"))
            print(f"FAIL {path}: {type(e).__name__}: {e}")
            continue
        rendered += 1
        missing = sorted(used - set(context) - set(env.globals))
        note = f" (left undefined: {', '.join(missing)})" if missing else ""
        print(f"ok   {path}: {len(output)} chars{note}")
        # A samples file beside the template: each of its renders must work too.
        samples = samples_file(CORPUS / path)
        if samples.exists():
            for n, sample in enumerate(yaml.safe_load(samples.read_text()), 1):
                try:
                    env.get_template(name).render(**wrap(sample))
                except Exception as e:
                    failed.append((path, f"sample {n}: {type(e).__name__}: {e}"))
                    print(f"FAIL {path}: {samples.name} sample {n}: {type(e).__name__}: {e}")
            print(f"ok   {path}: every sample of {samples.name}")
    total = rendered + len(failed)
    print(f"\n{rendered}/{total} prompt templates rendered with Python Jinja2 {jinja2.__version__}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
