from os import PathLike
from typing import Any, Optional, Sequence, Union

def assert_cache_friendly(
    paths: Union[str, PathLike[str], Sequence[Union[str, PathLike[str]]]],
    min_shared_prefix: float = ...,
    config: Optional[Union[str, PathLike[str]]] = ...,
) -> dict[str, Any]: ...
