"""A test helper for prompt repositories: assert in pytest (or any test) that templates keep
their shared prefix.

    from prefixlint import assert_cache_friendly

    def test_agent_prompt_is_cache_friendly():
        assert_cache_friendly("prompts/agent.j2", min_shared_prefix=0.8)
"""

from __future__ import annotations

import os
from typing import Optional, Sequence, Union

PathLike = Union[str, "os.PathLike[str]"]


def assert_cache_friendly(
    paths: Union[PathLike, Sequence[PathLike]],
    min_shared_prefix: float = 0.8,
    config: Optional[PathLike] = None,
) -> dict:
    """Checks ``paths`` (templates or folders) and fails unless every template's renders
    share at least ``min_shared_prefix`` of the shortest render's tokens. A template that
    cannot be checked fails too. Returns the report.

    The message names each failing template with its shared prefix and the findings that
    say which expression breaks it.
    """
    from . import check

    if not 0.0 <= min_shared_prefix <= 1.0:
        raise ValueError(f"min_shared_prefix is a fraction of the prompt, got {min_shared_prefix}")
    report = check(paths, config=config)
    problems = []
    for error in report.get("errors", []):
        problems.append(f"{error.get('path')}: cannot be checked: {error.get('message')}")
    templates = report.get("templates", [])
    for t in templates:
        shortest = t["tokens"]["min"]
        shared = t["shared_prefix_tokens"]
        fraction = 1.0 if shortest == 0 else shared / shortest
        if fraction + 1e-12 < min_shared_prefix:
            lines = [
                f"{t['path']}: the renders share {shared} of {shortest} tokens "
                f"({fraction:.0%}), under {min_shared_prefix:.0%}"
            ]
            for d in t.get("diagnostics", []):
                lines.append(
                    f"    {t['path']}:{d.get('line')}:{d.get('column')}: {d.get('rule')} {d.get('message')}"
                )
            problems.append("\n".join(lines))
    if not templates and not problems:
        problems.append(f"no template found in {paths!r}")
    if problems:
        raise AssertionError("prefixlint: not cache friendly:\n" + "\n".join(problems))
    return report
