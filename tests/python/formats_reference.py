"""Renders templates with the template formats' own libraries, for tests/heavy/formats_reference.rs.

    formats_reference.py render FORMAT TEMPLATE SAMPLES
        prints JSON: {"renders": [{LIBRARY: TEXT or {"error": MESSAGE}}, ...]}, one entry per
        sample, for each library that implements FORMAT:
          format           CPython's str.format; LangChain's PromptTemplate.format (where
                           LangChain accepts the template: no `.`/`[]` fields, no nested specs)
          crewai           CrewAI's interpolate_only, read from the pinned wheel
          semantic-kernel  semantic-kernel's KernelPromptTemplate, each `{{plugin.function}}`
                           a kernel function returning the sample's value at plugin.function
          fstring          CPython evaluating the f-string over the sample's values
          mustache         chevron's render (no partials: prefixlint refuses them)
    formats_reference.py generate DIR SEED COUNT
        writes DIR/random.format.txt, its samples and DIR/expected.txt: COUNT random fields
        (values of every type, conversions, format specs) that CPython formats, and what it
        makes of them, apart by U+001E.
    formats_reference.py generate-mustache DIR SEED COUNT
        writes DIR/N.mustache.txt for N < COUNT: random templates (sections over lists,
        maps, scalars and missing names, inverted sections, dotted names, `.`, escaped and
        raw tags, comments, delimiter changes, standalone lines with blanks around them),
        DIR/samples.yaml (one sample) and DIR/expected.json: chevron's render of each, or
        null where chevron fails.
"""

import asyncio
import json
import math
import os
import random
import re
import sys
import types
import zipfile

import yaml


def crewai_interpolate():
    """CrewAI's own `interpolate_only`, executed from the wheel's source file."""
    wheel = os.environ["PREFIXLINT_CREWAI_WHEEL"]
    with zipfile.ZipFile(wheel) as archive:
        source = archive.read("crewai/utilities/string_utils.py").decode()
    module = types.ModuleType("crewai_string_utils")
    exec(compile(source, "crewai/utilities/string_utils.py", "exec"), module.__dict__)
    return module.interpolate_only


def semantic_kernel_render(template, values):
    from semantic_kernel import Kernel
    from semantic_kernel.functions import KernelArguments, kernel_function
    from semantic_kernel.prompt_template import KernelPromptTemplate, PromptTemplateConfig

    kernel = Kernel()
    # Every call's arguments become optional parameters of the stand-in function: the
    # first (positional) one is `input`, the named ones keep their names.
    parameters = ["input"] + sorted(set(re.findall(r"([0-9A-Za-z_]+)=", template)))
    signature = ", ".join(f"{name}: str = ''" for name in parameters)
    for plugin, function in set(re.findall(r"\{\{\s*([0-9A-Za-z_]+)\.([0-9A-Za-z_]+)", template)):
        result = values.get(plugin, {}).get(function, "")
        scope = {"result": result}
        exec(f"def stand_in({signature}) -> str:\n    return result", scope)
        kernel.add_function(plugin_name=plugin, function=kernel_function(name=function)(scope["stand_in"]))
    config = PromptTemplateConfig(template=template, template_format="semantic-kernel")
    prompt = KernelPromptTemplate(prompt_template_config=config)
    arguments = KernelArguments(**{k: v for k, v in values.items() if not isinstance(v, dict)})
    return asyncio.run(prompt.render(kernel, arguments))


def langchain_render(template, values):
    from langchain_core.prompts import PromptTemplate

    return PromptTemplate.from_template(template).format(**values)


def attempt(render):
    try:
        return render()
    except Exception as error:  # the library's own failure is the reference
        return {"error": f"{type(error).__name__}: {error}"}


def render(fmt, template_path, samples_path):
    with open(template_path, encoding="utf-8") as f:
        template = f.read()
    with open(samples_path, encoding="utf-8") as f:
        samples = yaml.safe_load(f)
    renders = []
    for values in samples:
        out = {}
        if fmt == "format":
            out["cpython"] = attempt(lambda: template.format(**values))
            out["langchain"] = attempt(lambda: langchain_render(template, values))
        elif fmt == "crewai":
            interpolate = crewai_interpolate()
            out["crewai"] = attempt(lambda: interpolate(template, values))
        elif fmt == "semantic-kernel":
            out["semantic-kernel"] = attempt(lambda: semantic_kernel_render(template, values))
        elif fmt == "mustache":
            import chevron

            out["chevron"] = attempt(lambda: chevron.render(template, values, partials_path=None))
        elif fmt == "fstring":
            out["cpython"] = attempt(lambda: eval('f"""' + template + '"""', {}, dict(values)))
        else:
            raise SystemExit(f"unknown format {fmt}")
        renders.append(out)
    json.dump({"renders": renders}, sys.stdout)


FILLS = ["", "", "", "*", "0", " ", "x", "é"]


def random_spec(rng):
    spec = ""
    align = rng.choice(["", "", "<", ">", "^", "="])
    if align:
        spec += rng.choice(FILLS) + align
    spec += rng.choice(["", "", "+", "-", " "])
    if rng.random() < 0.1:
        spec += "z"
    if rng.random() < 0.2:
        spec += "#"
    if rng.random() < 0.2:
        spec += "0"
    if rng.random() < 0.5:
        spec += str(rng.randint(0, 25))
    spec += rng.choice(["", "", "", ",", "_"])
    if rng.random() < 0.4:
        spec += "." + str(rng.randint(0, 20))
    spec += rng.choice(["", "", "", "s", "d", "b", "o", "x", "X", "c", "e", "E", "f", "F", "g", "G", "n", "%"])
    return spec


def random_value(rng):
    k = rng.random()
    if k < 0.2:
        return rng.choice(["", "ab", "héllo", "x" * 30, "a\nb", "it's", "<&>"])
    if k < 0.45:
        return rng.choice([0, 1, -1, 7, 42, -12345, 1234567, 2**40, -(2**62), 65, 255, rng.randint(-10**9, 10**9)])
    if k < 0.85:
        return rng.choice([0.0, -0.0, 1.0, 2.5, -2.5, 0.1, 1 / 3, 1e16, 1e-5, 123456.789, 1.5e300, -1e-300,
                           0.125, 0.375, 2.675, 1e22, 5e-324, 9.999999, 99.5, 0.5, 1.5, 1234.5,
                           math.inf, -math.inf, math.nan, rng.uniform(-1e6, 1e6), rng.uniform(-1, 1),
                           rng.expovariate(0.001)])
    if k < 0.92:
        return rng.choice([True, False])
    return rng.choice([None, [1, "a", 2.5], {"k": 1.5, "n": None}])


def generate(directory, seed, count):
    rng = random.Random(seed)
    fields, values = [], {}
    for i in range(count):
        name = f"v{i}"
        value = random_value(rng)
        spec = random_spec(rng)
        conversion = rng.choice(["", "", "", "", "!r", "!s", "!a"])
        field = "{" + name + conversion + (":" + spec if spec else "") + "}"
        try:
            field.format(**{name: value})
        except Exception:
            continue
        fields.append(field)
        values[name] = value
    samples_path = os.path.join(directory, "random.format.samples.yaml")
    with open(samples_path, "w", encoding="utf-8") as f:
        yaml.safe_dump([values], f, allow_unicode=True)
    # The values as YAML gives them back are what both sides read.
    with open(samples_path, encoding="utf-8") as f:
        loaded = yaml.safe_load(f)[0]
    # Fields apart by a record separator: values may hold line breaks.
    template = "\x1e".join(fields)
    with open(os.path.join(directory, "random.format.txt"), "w", encoding="utf-8") as f:
        f.write(template)
    with open(os.path.join(directory, "expected.txt"), "w", encoding="utf-8") as f:
        f.write(template.format(**loaded))


MUSTACHE_SAMPLE = {
    "name": "Ada <&> \"x\"",
    "n": 0,
    "f": 2.5,
    "yes": True,
    "no": False,
    "none": None,
    "empty": "",
    "list": [1, "two", {"name": "inner", "list": ["a"]}, None, False],
    "maps": [{"name": "m1", "n": 1}, {"name": "m2", "yes": False}, {}],
    "map": {"name": "deep", "map": {"name": "deeper", "n": 7}, "list": []},
    "words": ["x", "y"],
    "text": "line\nnext",
}
MUSTACHE_KEYS = ["name", "n", "f", "yes", "no", "none", "empty", "list", "maps", "map", "words",
                 "text", "missing", ".", "map.name", "map.map.n", "list.0", "list.2.name",
                 "list.-1", "words.1", "maps.0.name", "map.missing", "name.x"]


def random_mustache(rng, depth=0):
    parts = []
    for _ in range(rng.randint(1, 6)):
        k = rng.random()
        if k < 0.25:
            parts.append(rng.choice(["Hi ", "text", " ", "\n", "  \n", "\n  ", "\t", "é", "{ }", "a\r\n"]))
        elif k < 0.45:
            key = rng.choice(MUSTACHE_KEYS)
            pad = rng.choice(["", " "])
            parts.append(rng.choice(["{{%s%s%s}}", "{{{%s%s%s}}}", "{{&%s%s%s}}"]) % (pad, key, pad))
        elif k < 0.5:
            parts.append(rng.choice(["{{! note }}", "\n{{! standalone }}\n", "{{=<% %>=}}<% name %><%={{ }}=%>"]))
        elif depth < 3:
            kind = rng.choice("##^")
            # A section over a missing name that reads names inside reads as a loop over
            # objects, which prefixlint's samples stand in for: only inverted ones miss.
            key = rng.choice(MUSTACHE_KEYS[:12] + ["map.map", "list.2"] + (["missing"] if kind == "^" else []))
            lead = rng.choice(["", "\n", "\n  ", " "])
            trail = rng.choice(["", "\n", "  \n"])
            inner = random_mustache(rng, depth + 1)
            parts.append(f"{lead}{{{{{kind}{key}}}}}{trail}{inner}{lead}{{{{/{key}}}}}{trail}")
    return "".join(parts)


def generate_mustache(directory, seed, count):
    import chevron

    rng = random.Random(seed)
    samples_path = os.path.join(directory, "samples.yaml")
    with open(samples_path, "w", encoding="utf-8") as f:
        yaml.safe_dump([MUSTACHE_SAMPLE], f, allow_unicode=True)
    # The values as YAML gives them back (maps' keys sorted) are what both sides read.
    with open(samples_path, encoding="utf-8") as f:
        sample = yaml.safe_load(f)[0]
    expected = []
    for n in range(count):
        template = random_mustache(rng)
        with open(os.path.join(directory, f"{n}.mustache.txt"), "w", encoding="utf-8", newline="") as f:
            f.write(template)
        try:
            expected.append(chevron.render(template, sample, partials_path=None))
        except Exception:
            expected.append(None)
    with open(os.path.join(directory, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    if sys.argv[1] == "render":
        render(*sys.argv[2:5])
    elif sys.argv[1] == "generate":
        generate(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "generate-mustache":
        generate_mustache(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        raise SystemExit(__doc__)
