#!/usr/bin/env python3
"""Regenerates tests/fixtures/audit-agents/: the agent frameworks' traffic against a fresh
one-slot llama.cpp test server without a host-RAM prompt cache (the server's slot is then
the whole cache, as `audit --engine llama.cpp` models it).

Writes agents.jsonl (tests/audit_support/agent_runs.py's records) and versions.json (the
framework and server versions that wrote it).

Usage: .venv/bin/python tests/audit_support/regenerate_agent_logs.py [--out DIR]
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import agent_runs  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(REPO / "tests/fixtures/audit-agents"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen(
        [sys.executable, str(REPO / "tests/measure_support/llama_server.py"),
         "--exit-on-stdin-eof", "--parallel", "1", "--cache-ram", "0"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        port = None
        for line in server.stdout:
            if line.startswith("PORT "):
                port = line.split()[1]
                break
        if port is None:
            raise SystemExit("the llama.cpp test server did not start")
        proxy = agent_runs.Proxy(f"http://127.0.0.1:{port}", out / "agents.jsonl")
        try:
            for run in agent_runs.RUNS.values():
                run(proxy)
        finally:
            proxy.close()
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    (out / "versions.json").write_text(json.dumps(agent_runs.versions(), indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
