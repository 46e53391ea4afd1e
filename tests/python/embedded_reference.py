"""Renders templates embedded in host files the way their applications do, for
tests/it/hosts_reference.rs to compare with `prefixlint render --key` byte for byte.

    embedded_reference.py SAMPLES.yaml HOST#KEY...

YAML hosts are read with PyYAML (any `!Tag` read as its plain value) and the value at KEY
is rendered with Python Jinja2; a `.prompty` body is rendered by the `prompty` package's
own renderer; a prompt-poet `.yml.j2` file by `prompt_poet.Prompt` (its `string`, the
parts' contents joined); a Python host is run as a module and its module-level KEY is
rendered with Python Jinja2 (the string as Python computed it). Every render gets the first mapping of SAMPLES.yaml. Prints JSON:
{"renders": [{"host", "key", "text", "render"}]} (`text` is the template as extracted).
"""

import json
import os
import re
import sys

import jinja2
import yaml


class AnyTagLoader(yaml.SafeLoader):
    pass


def _plain(loader, suffix, node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


AnyTagLoader.add_multi_constructor("!", _plain)


def value_at(document, key):
    """`agent.templates.x`, `prompts[0].content`: the value at a dotted key path."""
    node = document
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", key):
        if part.startswith("["):
            node = node[int(part[1:-1])]
        else:
            node = node[part]
    return node


def yaml_render(host, key, context):
    with open(host, encoding="utf-8") as f:
        text = value_at(yaml.load(f, Loader=AnyTagLoader), key)
    return text, jinja2.Environment().from_string(text).render(**context)


def prompty_render(host, context):
    import prompty
    from prompty.invoker import InvokerFactory

    prompt = prompty.load(os.path.abspath(host))
    return prompt.content, InvokerFactory.run_renderer(prompt, context, prompt.content)


def prompt_poet_render(host, context):
    from prompt_poet import Prompt

    with open(host, encoding="utf-8") as f:
        raw = f.read()
    return raw, Prompt(raw_template=raw, template_data=dict(context)).string


def python_render(host, key, context):
    import runpy

    text = runpy.run_path(host)[key]
    return text, jinja2.Environment().from_string(text).render(**context)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        context = yaml.safe_load(f)[0]
    renders = []
    for target in sys.argv[2:]:
        host, key = target.split("#", 1)
        if host.endswith(".prompty"):
            text, render = prompty_render(host, context)
        elif host.endswith(".py"):
            text, render = python_render(host, key, context)
        elif host.endswith(".j2"):
            text, render = prompt_poet_render(host, context)
        else:
            text, render = yaml_render(host, key, context)
        renders.append({"host": host, "key": key, "text": text, "render": render})
    json.dump({"renders": renders}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
