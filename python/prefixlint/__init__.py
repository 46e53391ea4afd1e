"""prefixlint: lint prompt templates for prefix-cache friendliness, and audit what an
inference server really caches, from Python.

The functions run the same Rust library as the ``prefixlint`` command, and return what its
``--format json`` report says, field for field (see docs/python.md).
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _prefixlint as _native
from ._prefixlint import PrefixlintError, __version__
from .testing import assert_cache_friendly

__all__ = [
    "Auditor",
    "PrefixlintError",
    "Replay",
    "assert_cache_friendly",
    "check",
    "check_source",
    "merge_summaries",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]
Record = Union[Mapping[str, Any], str, bytes]


def check(paths: Union[PathLike, Sequence[PathLike]], config: Optional[PathLike] = None) -> dict:
    """``prefixlint check --format json --no-cache [--config CONFIG] PATHS...``: the report.

    A template that cannot be checked is in the report's ``errors``, as the command reports
    it; a bad config or path raises :class:`PrefixlintError`.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    text = _native.check_json(
        [os.fspath(p) for p in paths], None if config is None else os.fspath(config)
    )
    return json.loads(text)


def check_source(
    text: str,
    samples: Optional[str] = None,
    tokenizer: Optional[str] = None,
    path: Optional[PathLike] = None,
) -> dict:
    """One template's text checked as ``check`` checks a file: the JSON report.

    ``samples`` is the text of its samples file (YAML), ``tokenizer`` as ``--tokenizer``,
    ``path`` the name it is checked under (default ``template.j2`` in the working folder: its
    includes and the project's ``prefixlint.yaml`` are found from there). A template that
    cannot be checked raises :class:`PrefixlintError` with its file, line and column.
    """
    return json.loads(
        _native.check_source_json(
            text, samples, tokenizer, None if path is None else os.fspath(path)
        )
    )


def _line(record: Record) -> bytes:
    if isinstance(record, bytes):
        return record.rstrip(b"\r\n")
    if isinstance(record, str):
        return record.rstrip("\r\n").encode("utf-8")
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class Auditor:
    """``prefixlint audit`` one session at a time.

    ``tokenizer``, ``chat_template``, ``engine`` (``"vllm:block_size=16"``), ``session_key``
    and ``input_format`` are the command's flags; ``config`` a ``prefixlint.yaml`` to read
    (none by default). The tokenizer and chat template are loaded once.
    """

    def __init__(
        self,
        tokenizer: Optional[str] = None,
        chat_template: Optional[PathLike] = None,
        engine: Optional[str] = None,
        session_key: Optional[str] = None,
        input_format: Optional[str] = None,
        config: Optional[PathLike] = None,
    ) -> None:
        self._native = _native.Auditor(
            tokenizer,
            None if chat_template is None else os.fspath(chat_template),
            engine,
            session_key,
            input_format,
            None if config is None else os.fspath(config),
        )
        self.engine, self.chat_template = self._native.head()

    def audit(
        self,
        records: Iterable[Record],
        file: Union[str, Sequence[str]] = "-",
        lines: Optional[Sequence[int]] = None,
    ) -> "list[dict]":
        """Audits one session's records (parsed log records, or their JSON lines), in log
        order, as ``prefixlint audit`` audits them in a log of their own.

        Returns the report's ``requests[]`` entries. ``file`` (one name, or one per record)
        and ``lines`` say where the records are in the log (default: lines 1, 2, ...); requests that cannot be audited and
        lines that are not requests go to the summary, as in the command's report.
        """
        texts = [_line(r) for r in records]
        if lines is None:
            lines = range(1, len(texts) + 1)
        files = [file] * len(texts) if isinstance(file, str) else [str(f) for f in file]
        entries = self._native.audit_lines(texts, files, [int(n) for n in lines])
        return [json.loads(e) for e in entries]

    def summary(self) -> dict:
        """The JSON report's ``summary`` over everything audited since this auditor was made
        (or :meth:`reset`)."""
        return json.loads(self._native.summary_json())

    def keys(self) -> "list[tuple[str, int, bytes]]":
        """The cache key of each request audited since this auditor was made (or
        :meth:`reset`), with its file and line (to sort by): its blocks' hashes and time,
        for :class:`Replay`."""
        return self._native.keys()

    def reset(self) -> None:
        """Forgets what was audited; the tokenizer and chat template stay loaded."""
        self._native.reset()

    def session_of(self, record: Record) -> Optional[str]:
        """The session key of a record as ``prefixlint audit`` reads it; ``None`` puts it in
        the fallback group (no key, or not a request)."""
        return self._native.session_of(_line(record))


class Replay:
    """The engine's cache model replayed over the cache keys of a whole log, in log order:
    the hits one session gets from another (see docs/python.md, "At scale")."""

    def __init__(self, engine: Optional[str] = None) -> None:
        self._native = _native.ReplayModel(engine)

    def feed(
        self, keys: Iterable[Union[bytes, "tuple[str, int, bytes]"]], sort: bool = False
    ) -> "list[Optional[int]]":
        """Takes the next keys in log order (``sort=True`` sorts this batch by file and line
        first), as :meth:`Auditor.keys` gives them or their bytes alone; returns each
        request's predicted cached tokens (``None``: not audited), in the order fed (sorted,
        with ``sort=True``)."""
        raw = [k[-1] if isinstance(k, tuple) else k for k in keys]
        return self._native.feed(raw, sort)

    @property
    def predicted_cached_tokens(self) -> int:
        """The summary's ``predicted_cached_tokens`` over the keys fed so far."""
        return self._native.predicted_cached_tokens

    def apply(self, summary: dict) -> dict:
        """``summary`` (merged from the parts) with the replay's ``predicted_cached_tokens``,
        and its ``cost`` billed on them (each part's cost saw only its own sessions)."""
        out = dict(summary)
        out["predicted_cached_tokens"] = self.predicted_cached_tokens
        cost = self._native.cost(out["prompt_tokens"], out.get("tokens_lost_by_cause", {}))
        if cost is not None:
            out["cost"] = json.loads(cost)
        else:
            out.pop("cost", None)
        return out


def merge_summaries(summaries: Iterable[Mapping[str, Any]]) -> dict:
    """The summary of a whole log from its parts' summaries (sums add up, the worst sessions
    are the top 5 of all, the lists come back in log order)."""
    merged = _native.merge_summaries_json([json.dumps(s) for s in summaries])
    return json.loads(merged)
