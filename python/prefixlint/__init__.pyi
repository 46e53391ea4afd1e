from os import PathLike
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

_Path = Union[str, PathLike[str]]
Record = Union[Mapping[str, Any], str, bytes]

__version__: str

class PrefixlintError(Exception):
    """miette's rendering of the error, and the file and place it names (1-based)."""
    message: str
    path: Optional[str]
    line: Optional[int]
    column: Optional[int]

def check(paths: Union[_Path, Sequence[_Path]], config: Optional[_Path] = ...) -> dict[str, Any]: ...
def check_source(
    text: str,
    samples: Optional[str] = ...,
    tokenizer: Optional[str] = ...,
    path: Optional[_Path] = ...,
) -> dict[str, Any]: ...
def merge_summaries(summaries: Iterable[Mapping[str, Any]]) -> dict[str, Any]: ...
def assert_cache_friendly(
    paths: Union[_Path, Sequence[_Path]],
    min_shared_prefix: float = ...,
    config: Optional[_Path] = ...,
) -> dict[str, Any]: ...

class Auditor:
    engine: str
    chat_template: str
    def __init__(
        self,
        tokenizer: Optional[str] = ...,
        chat_template: Optional[_Path] = ...,
        engine: Optional[str] = ...,
        session_key: Optional[str] = ...,
        input_format: Optional[str] = ...,
        config: Optional[_Path] = ...,
    ) -> None: ...
    def audit(
        self,
        records: Iterable[Record],
        file: Union[str, Sequence[str]] = ...,
        lines: Optional[Sequence[int]] = ...,
    ) -> list[dict[str, Any]]: ...
    def summary(self) -> dict[str, Any]: ...
    def keys(self) -> list[tuple[str, int, bytes]]: ...
    def reset(self) -> None: ...
    def session_of(self, record: Record) -> Optional[str]: ...

class Replay:
    def __init__(self, engine: Optional[str] = ...) -> None: ...
    def feed(
        self, keys: Iterable[Union[bytes, tuple[str, int, bytes]]], sort: bool = ...
    ) -> list[Optional[int]]: ...
    @property
    def predicted_cached_tokens(self) -> int: ...
    def apply(self, summary: dict[str, Any]) -> dict[str, Any]: ...
