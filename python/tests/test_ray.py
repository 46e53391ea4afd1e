"""The partitioned audit on Ray Data in local mode (examples/audit_at_scale.py): the merged
summary equals the single-process `prefixlint audit` summary, field for field."""

import importlib.util
import json
from pathlib import Path

import pytest

import gen_audit_log as genlog

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "audit_at_scale.py"


@pytest.fixture(scope="module")
def at_scale():
    spec = importlib.util.spec_from_file_location("audit_at_scale", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    module.ray.shutdown()


@pytest.mark.parametrize("engine", [None, "vllm:block_size=16"])
def test_ray_data_audit_equals_the_command(cli, tmp_path, at_scale, engine):
    log = tmp_path / "traffic.jsonl"
    genlog.write(log, 4000, seed=11)
    args = ["audit", "--no-config", "--format", "json", str(log)]
    if engine:
        args += ["--engine", engine]
    expected = json.loads(cli(*args).stdout)
    summary, results, predicted = at_scale.audit(str(log), workers=2, engine=engine)
    # Several partitions: read in byte ranges, audited in several blocks of groups.
    assert results.num_blocks() >= 2
    assert summary == expected["summary"]
    entries = sorted((json.loads(r["data"]) for r in
                      results.filter(lambda r: r["kind"] == "request").take_all()),
                     key=lambda e: e["line"])
    for entry, p in zip(entries, [p for p in predicted if p is not None]):
        entry["predicted_cached_tokens"] = p
    assert entries == expected["requests"]
    assert expected["summary"]["requests_without_session"] > 0
