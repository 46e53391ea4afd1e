import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# The log generator the tests share with the 1M-request run: bench/gen_audit_log.py.
sys.path.insert(0, str(HERE.parents[1] / "bench"))


@pytest.fixture(scope="session")
def cli():
    """The `prefixlint` binary cargo built from this tree (PREFIXLINT_BIN), to compare with."""
    binary = os.environ.get("PREFIXLINT_BIN")
    assert binary and Path(binary).is_file(), "PREFIXLINT_BIN names the cargo-built prefixlint"

    def run(*args, check=True):
        done = subprocess.run([binary, *args], capture_output=True, text=True,
                              env={**os.environ, "PREFIXLINT_NO_CACHE": "1"})
        if check:
            assert done.returncode in (0, 1), done.stderr
        return done

    return run


@pytest.fixture(scope="session")
def fixtures():
    return HERE / "fixtures"
