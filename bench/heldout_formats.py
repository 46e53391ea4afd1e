"""Issue 40's "done when" figures on the held-out corpus (bench/heldout-formats), which was
written after the code and never tuned on: each repository checked with zero config, as a
new user would, and compared with a careful reader's ground truth (truth.json).

    heldout_formats.py [--bin PATH] [--corpus DIR]

Figures: the share of prompt templates checked in place (a reported template in the file,
starting inside the prompt's lines; one listed under `unchecked` where truth allows it is
counted apart), the share of volatile places reported at the host line (a finding on that
line of that file), the findings a careful reader rejects (any finding elsewhere), the
controls checked as prompts, and the repositories with prompts that pass in silence (exit 0,
nothing checked, nothing unchecked). The same script runs any build (`--bin`), so the
figure of an older build is the baseline.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(binary, repo):
    result = subprocess.run(
        [binary, "check", ".", "--no-config", "--no-cache", "--format", "json"],
        cwd=repo, capture_output=True, text=True,
    )
    try:
        return result.returncode, json.loads(result.stdout)
    except json.JSONDecodeError:
        return result.returncode, {"templates": [], "errors": [{"path": "?", "message": result.stderr}], "unchecked": []}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.path.join(HERE, "..", "target", "release", "prefixlint"))
    parser.add_argument("--corpus", help="where to write the corpus (a temporary folder by default)")
    args = parser.parse_args()
    args.bin = os.path.abspath(args.bin)
    corpus = args.corpus or tempfile.mkdtemp(prefix="heldout-formats-")
    subprocess.run([sys.executable, os.path.join(HERE, "heldout-formats", "write_corpus.py"), corpus], check=True)
    truth = json.load(open(os.path.join(HERE, "heldout-formats", "truth.json")))["repos"]
    totals = dict(templates=0, checked=0, unchecked_ok=0, volatile=0, reported=0, rejected=0,
                  controls=0, controls_checked=0, prompt_repos=0, silent=0)
    for name, expected in truth.items():
        code, report = run(args.bin, os.path.join(corpus, name))
        found = []
        for template in report.get("templates", []):
            embedded = template.get("embedded") or {}
            found.append((template["path"], embedded.get("line", 1)))
        findings = set()
        for template in report.get("templates", []):
            for d in template["diagnostics"]:
                findings.add((template["path"], d["line"], d["rule"]))
        unchecked = {(u["path"], u["line"]) for u in report.get("unchecked", [])}
        for path, first, last in expected["templates"]:
            totals["templates"] += 1
            if any(p == path and first <= line <= last for p, line in found):
                totals["checked"] += 1
            elif any(p == path and first <= line <= last for p, line in unchecked) and \
                    [path, first] in expected["unchecked_ok"]:
                totals["unchecked_ok"] += 1
            else:
                print(f"  missed template {name}/{path}:{first}")
        volatile = {(p, line) for p, line in expected["volatile"]}
        for path, line in sorted(volatile):
            totals["volatile"] += 1
            if any(p == path and l == line for p, l, _ in findings):
                totals["reported"] += 1
            else:
                print(f"  not reported: {name}/{path}:{line}")
        for path, line, rule in sorted(findings):
            if (path, line) not in volatile:
                totals["rejected"] += 1
                print(f"  rejected: {name}/{path}:{line} {rule}")
        for control in expected["controls"]:
            totals["controls"] += 1
            if any(p == control for p, _ in found):
                totals["controls_checked"] += 1
                print(f"  control checked: {name}/{control}")
        if expected["templates"]:
            totals["prompt_repos"] += 1
            if code == 0 and not found and not unchecked:
                totals["silent"] += 1
                print(f"  silent: {name}")
        for error in report.get("errors", []):
            print(f"  error: {name}/{error['path']}: {error['message'][:120]}")
    t = totals
    print(f"binary: {args.bin}")
    print(f"prompt templates checked in place: {t['checked']}/{t['templates']} = {100 * t['checked'] / t['templates']:.0f}%"
          f" (+{t['unchecked_ok']} listed under unchecked: a format or loader this build cannot check)")
    print(f"volatile places reported at the host line: {t['reported']}/{t['volatile']} = {100 * t['reported'] / t['volatile']:.0f}%")
    print(f"findings a careful reader rejects: {t['rejected']}")
    print(f"non-prompt controls checked as prompts: {t['controls_checked']}/{t['controls']}")
    print(f"repositories with prompts that pass in silence: {t['silent']}/{t['prompt_repos']}")


if __name__ == "__main__":
    main()
