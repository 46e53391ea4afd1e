"""Writes a repository of Python, YAML, JSON, TOML and Markdown files without prompts, for
bench/formats_hosts.sh (issue 40: `check` on 10,000 such files within 1 s). Each kind is a
fifth of the files and holds the braces such files hold: f-strings, `.format` on log
messages and dicts in Python; flow mappings and `{{ }}` of a deploy tool in YAML; objects
and URL templates in JSON; inline tables and `{host}` settings in TOML; code and `{name}`
in Markdown docs. One file in ten gets past the byte prefilter (a `{name` field, a
`prompt`/`instruction` word), so the parsers run on it and find nothing.

    gen_formats_hosts.py OUT_DIR --files N
"""

import argparse
import json
import os
import random

PYTHON = '''"""Module {n}: helpers for the billing service."""

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)
RATES = {{"eu": 0.2, "us": 0.0, "uk": 0.2}}


@dataclass
class Invoice{n}:
    id: int
    total: float
    region: str

    def describe(self) -> str:
        return f"invoice {{self.id}}: {{self.total:.2f}} ({{self.region}})"

    def tax(self) -> float:
        return self.total * RATES.get(self.region, 0.0)


def log_failure_{n}(invoice, reason):
    log.warning("invoice %s failed: %s", invoice.id, reason)
    return "failed {{}}: {{}}".format(invoice.id, reason)
'''

PYTHON_DECOY = PYTHON + '''

# The instructions for operators live in the runbook; this string is a log format.
LOG_TEMPLATE = "{{asctime}} {{levelname}} {{message}}"
'''

YAML = '''# service {n}
name: service-{n}
replicas: {r}
resources: {{cpu: 500m, memory: 256Mi}}
env:
  - name: LOG_LEVEL
    value: info
  - name: REGION
    value: eu-west-{r}
'''

YAML_DECOY = YAML + '''deploy:
  banner: "Deploying {{{{ version }}}} of service-{n}"
  url: "https://{{host}}/services/{n}"
'''

TOML = '''[package]
name = "service-{n}"
version = "0.{r}.0"

[server]
address = "0.0.0.0:80{r}"
limits = {{ requests = 100, burst = 20 }}

[logging]
level = "info"
'''

TOML_DECOY = TOML + '''format = "{{time}} {{level}} {{message}}"
'''

MARKDOWN = '''# Service {n}

The service answers on port 80{r}. Configure it in `config.toml`:

```toml
[server]
address = "0.0.0.0:80{r}"
```

Run it with `make run` and check `/healthz`.
'''

MARKDOWN_DECOY = MARKDOWN + '''
The URL of an item is `https://{{host}}/items/{{id}}`; you can read the following pages for
details about the options: timeout, retries and the output folder.
'''


def json_text(n, r, decoy):
    value = {
        "name": f"service-{n}",
        "replicas": r,
        "ports": [8000 + r, 9000 + r],
        "labels": {"team": "billing", "tier": "backend"},
    }
    if decoy:
        value["links"] = {"item": "https://{host}/items/{id}", "docs": "see {docs_url}"}
    return json.dumps(value, indent=2) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--files", type=int, default=10000)
    args = parser.parse_args()
    random.seed(40)
    kinds = ["py", "yaml", "json", "toml", "md"]
    for i in range(args.files):
        kind = kinds[i % len(kinds)]
        n = i // len(kinds)
        r = random.randint(1, 9)
        decoy = (n % 10) == 0
        folder = os.path.join(args.out, f"pkg{n // 100:03d}")
        os.makedirs(folder, exist_ok=True)
        if kind == "py":
            text = (PYTHON_DECOY if decoy else PYTHON).format(n=n)
        elif kind == "yaml":
            text = (YAML_DECOY if decoy else YAML).format(n=n, r=r)
        elif kind == "json":
            text = json_text(n, r, decoy)
        elif kind == "toml":
            text = (TOML_DECOY if decoy else TOML).format(n=n, r=r)
        else:
            text = (MARKDOWN_DECOY if decoy else MARKDOWN).format(n=n, r=r)
        with open(os.path.join(folder, f"f{n}.{kind}"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
