"""The installed wheel: the command and the module, on the same library as the cargo-built
binary, and results equal to `prefixlint --format json` field for field."""

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import prefixlint
import gen_audit_log as genlog


def test_the_wheel_installs_the_command_and_the_module(cli):
    assert "site-packages" in prefixlint.__file__
    # The console script pip put beside this venv's python.
    command = str(Path(sys.executable).parent / "prefixlint")
    assert Path(command).is_file(), command
    done = subprocess.run([command, "--version"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout == cli("--version").stdout
    assert done.stdout.strip() == f"prefixlint {prefixlint.__version__}"
    # Usage errors exit 2 with clap's message, as the binary's.
    bad = subprocess.run([command, "check", "--no-such-flag"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--no-such-flag" in bad.stderr


def test_check_equals_the_command_json(cli, fixtures):
    prompts = str(fixtures / "prompts")
    expected = json.loads(cli("check", "--format", "json", "--no-cache", prompts).stdout)
    assert prefixlint.check(prompts) == expected
    assert prefixlint.check([Path(prompts)]) == expected
    assert len(expected["templates"]) == 2


def test_check_source_checks_text_and_raises_with_the_place(fixtures):
    text = (fixtures / "prompts" / "agent.j2").read_text()
    samples = (fixtures / "prompts" / "agent.samples.yaml").read_text()
    report = prefixlint.check_source(text, samples=samples)
    (template,) = report["templates"]
    assert template["samples"] == 2 and template["shared_prefix_tokens"] > 40
    with pytest.raises(prefixlint.PrefixlintError) as caught:
        prefixlint.check_source("Hello\n{{ name ", path="broken.j2")
    error = caught.value
    assert (error.path, error.line) == ("broken.j2", 2), (error.path, error.line, error.column)
    assert error.column and "syntax error" in error.message and "broken.j2" in str(error)
    with pytest.raises(prefixlint.PrefixlintError) as caught:
        prefixlint.check(fixtures / "no-such-folder")
    assert "no-such-folder" in caught.value.message


def test_assert_cache_friendly(fixtures):
    prompts = fixtures / "prompts"
    report = prefixlint.assert_cache_friendly(prompts / "agent.j2", min_shared_prefix=0.8)
    assert report["templates"][0]["path"].endswith("agent.j2")
    with pytest.raises(AssertionError) as caught:
        prefixlint.assert_cache_friendly(str(prompts / "stamped.j2"), min_shared_prefix=0.8)
    message = str(caught.value)
    assert "stamped.j2" in message and "PL00" in message, message
    with pytest.raises(ValueError):
        prefixlint.assert_cache_friendly(prompts, min_shared_prefix=80)


def partitioned(log, engine=None):
    """The log audited a session at a time (phase 1), its keys replayed (phase 2)."""
    auditor = prefixlint.Auditor(engine=engine)
    groups = defaultdict(list)
    with open(log, "rb") as f:
        for number, line in enumerate(f, 1):
            groups[auditor.session_of(line)].append((number, line))
    entries, keys, summaries = [], [], []
    for session, records in groups.items():
        auditor.reset()
        entries += auditor.audit([r for _, r in records], file=str(log),
                                 lines=[n for n, _ in records])
        keys += auditor.keys()
        summaries.append(auditor.summary())
    replay = prefixlint.Replay(engine=engine)
    predicted = [p for p in replay.feed(keys, sort=True) if p is not None]
    entries.sort(key=lambda e: e["line"])
    alone = sum(e["predicted_cached_tokens"] for e in entries)
    for entry, p in zip(entries, predicted):
        entry["predicted_cached_tokens"] = p
    merged = prefixlint.merge_summaries(summaries)
    assert merged["predicted_cached_tokens"] == alone
    return entries, replay.apply(merged), alone


@pytest.mark.parametrize("engine", [None, "vllm:block_size=16", "deepseek"])
def test_a_partitioned_audit_equals_the_command(cli, tmp_path, engine):
    log = tmp_path / "traffic.jsonl"
    genlog.write(log, 1500)
    args = ["audit", "--no-config", "--format", "json", str(log)]
    if engine:
        args += ["--engine", engine]
    expected = json.loads(cli(*args).stdout)
    entries, summary, alone = partitioned(log, engine)
    assert summary == expected["summary"]
    assert entries == expected["requests"]
    s = expected["summary"]
    # The log exercises what the merge and the replay must get right.
    assert s["requests_without_session"] > 0 and s["not_audited"] and s["skipped"]
    assert s["missed_hits"] and len(s["tokens_lost_by_cause"]) >= 3
    # Sessions serve each other: the replay finds more than each session alone.
    assert s["predicted_cached_tokens"] > alone


def keyless_log(path):
    """A log where requests without a session key follow sessions that share their prompts:
    one right after a session's request with the same system prompt, and one continuing an
    earlier session-less request, over 520 requests of other sessions later (past the window
    and the requests kept in full), right after a session's request that shares more of it."""
    lines = []

    def record(messages, session=None):
        t = 1_764_460_800 + 2 * len(lines)
        body = {"model": "m", "messages": messages}
        reply = {"role": "assistant", "content": f"Reply {len(lines)}."}
        metadata = {"timestamp": t, **({"session_id": session} if session else {})}
        lines.append(json.dumps({"request": body, "metadata": metadata, "response": {
            "choices": [{"message": reply}], "usage": {"prompt_tokens": 0, "completion_tokens": 4}}}))
        return len(lines)

    desk = {"role": "system", "content": "You are the help desk of an online shop. " * 8}
    record([desk, {"role": "user", "content": "Where is order 1?"}], "desk")
    after_session = record([desk, {"role": "user", "content": "Where is order 2?"}])
    triage = "You sort tickets into billing, shipping or other. " * 8
    turns = [{"role": "user", "content": "Ticket 7: my parcel is late."},
             {"role": "assistant", "content": "shipping"},
             {"role": "user", "content": "Ticket 8: I was charged twice."}]
    first = record([{"role": "system", "content": triage + "Now: 10:00"}] + turns[:1])
    for i in range(520):
        record([{"role": "system", "content": f"Filler {i}."},
                {"role": "user", "content": "Hello."}], f"filler-{i}")
    record([{"role": "system", "content": triage + "Now: 10:00"}] + turns, "triage")
    second = record([{"role": "system", "content": triage + "Now: 10:25"}] + turns)
    path.write_text("\n".join(lines) + "\n")
    return after_session, first, second


@pytest.mark.parametrize("engine", [None, "vllm:block_size=16"])
def test_a_request_without_a_session_is_matched_alike_in_both(cli, tmp_path, engine):
    log = tmp_path / "keyless.jsonl"
    after_session, _, second = keyless_log(log)
    args = ["audit", "--no-config", "--format", "json", str(log)]
    if engine:
        args += ["--engine", engine]
    expected = json.loads(cli(*args).stdout)
    entries, summary, _ = partitioned(log, engine)
    assert summary == expected["summary"]
    assert entries == expected["requests"]
    by_line = {e["line"]: e for e in expected["requests"]}
    # Matched only with earlier session-less requests: not with the session before it ...
    assert by_line[after_session]["break"] is None
    # ... and with the session-less one it continues, not the session that shares more.
    assert by_line[second]["break"]["cause"] == "clock"
    assert expected["summary"]["requests_without_session"] == 3

def test_merge_summaries_of_halves(cli, tmp_path):
    log = tmp_path / "traffic.jsonl"
    genlog.write(log, 400)
    expected = json.loads(cli("audit", "--no-config", "--format", "json", str(log)).stdout)["summary"]
    _, whole, _ = partitioned(log)
    assert whole == expected
    halves = [{**expected, "worst_sessions": expected["worst_sessions"][i::2],
               "missed_hits": expected["missed_hits"][i::2]} for i in (0, 1)]
    merged = prefixlint.merge_summaries(halves)
    assert merged["requests"] == 2 * expected["requests"]
    assert merged["missed_hits"] == sorted(expected["missed_hits"], key=lambda h: h["line"])
    with pytest.raises(prefixlint.PrefixlintError):
        prefixlint.merge_summaries([{"requests": "many"}, {"requests": 1}])
