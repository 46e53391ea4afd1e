"""Writes a repository of Python and YAML files without prompt templates, for
bench/embedded.sh: half Python modules, half YAML configs; one file in ten holds `{{ }}`
that is not a prompt (an Ansible task list, a Python string with a literal brace pair), so
the byte prefilter lets it through and the parser runs.

    gen_hosts.py OUT_DIR --files N
"""

import argparse
import os
import random

PYTHON = '''"""Module {n}: helpers for the order service."""

import json
from dataclasses import dataclass


@dataclass
class Order{n}:
    id: int
    total: float

    def describe(self) -> str:
        return f"order {{self.id}}: {{self.total:.2f}}"


def load_{n}(path):
    with open(path) as f:
        return [Order{n}(**row) for row in json.load(f)]
'''

PYTHON_BRACES = PYTHON + '''

TEMPLATE_NOTE = "write {{{{ and }}}} to escape braces in str.format"
'''

YAML = '''# service {n}
name: service-{n}
replicas: {r}
resources:
  cpu: "{r}00m"
  memory: 256Mi
env:
  - name: LOG_LEVEL
    value: info
  - name: REGION
    value: eu-west-{r}
'''

ANSIBLE = '''- name: install service {n}
  apt:
    name: "{{{{ item }}}}"
  loop: "{{{{ packages }}}}"
- name: write the banner for {n}
  copy:
    content: "{{{{ banner }}}} on {{{{ inventory_hostname }}}}"
    dest: /etc/issue
'''


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--files", type=int, default=10000)
    args = parser.parse_args()
    rng = random.Random(23)
    for n in range(args.files):
        folder = os.path.join(args.out, f"pkg{n // 100:03d}")
        os.makedirs(folder, exist_ok=True)
        braces = rng.random() < 0.1
        if n % 2 == 0:
            text = (PYTHON_BRACES if braces else PYTHON).format(n=n)
            name = f"module_{n}.py"
        else:
            text = (ANSIBLE if braces else YAML).format(n=n, r=rng.randint(1, 9))
            name = f"config_{n}.yaml"
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
