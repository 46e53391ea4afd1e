#!/usr/bin/env bash
# Issue 41: every command's output from two builds, compared byte for byte (stdout, stderr and
# the exit code of each run): `check` cold (--no-cache) and warm (a first cached run, then a
# served one, each build with its own cache folder) in every format on the fixture and bench
# corpora; `audit` (full and JSON; llama.cpp and vLLM) on the bench logs and every fixture log;
# `simulate` on the fixture logs and a bench log. Prints each difference and the count of files
# compared; exits 1 on any difference.
#
# Usage: bench/identical.sh BEFORE AFTER
# The bench inputs (git-ignored) are made first if missing: bench/corpus, bench/out/realrepo,
# bench/out/fewshot (as bench/targets.sh makes them) and the audit logs below.
set -uo pipefail
cd "$(dirname "$0")/.."
before=$(realpath "$1")
after=$(realpath "$2")
work=$(mktemp -d /tmp/prefixlint-identical-XXXXXX)
trap 'rm -rf "$work"' EXIT
export NO_COLOR=1 PREFIXLINT_CACHE_DIR="$work/tokenizers"
unset PREFIXLINT_STAGE_TIMES PREFIXLINT_TIMELINE PREFIXLINT_NO_CACHE GITHUB_ACTIONS

mkdir -p bench/out
[ -d bench/corpus ] || python3 bench/gen_corpus.py bench/corpus --templates 1000
[ -d bench/out/realrepo ] || python3 bench/gen_realrepo.py bench/out/realrepo --templates 500
[ -d bench/out/fewshot ] || python3 bench/gen_fewshot.py bench/out/fewshot --templates 2000
[ -f bench/out/audit-100000.jsonl ] || python3 bench/audit.py --generate bench/out/audit-100000.jsonl 100000
[ -f bench/out/audit-long-15000.jsonl ] || python3 bench/audit.py --generate bench/out/audit-long-15000.jsonl 15000 --shape long
[ -f bench/out/agent-20k.jsonl ] || python3 bench/gen_audit_log.py bench/out/agent-20k.jsonl 20000
[ -f bench/out/audit-20000.jsonl ] || head -20000 bench/out/audit-100000.jsonl > bench/out/audit-20000.jsonl

compared=0
differ=0
failed=0
n=0
# run NAME DIR ARGS...: runs both builds in DIR, compares what they wrote.
run() {
  local name=$1 dir=$2
  shift 2
  n=$((n + 1))
  local id
  id=$(printf '%03d' "$n")
  for side in before after; do
    local bin=$before
    [ "$side" = after ] && bin=$after
    local args=("$@")
    args=("${args[@]//@CACHE@/$work/cache-$side}")
    (cd "$dir" && "$bin" "${args[@]}" >"$work/$id.$side.out" 2>"$work/$id.$side.err"; echo $? >"$work/$id.$side.code")
  done
  [ "$(cat "$work/$id.before.code")" = 2 ] && failed=$((failed + 1))
  for part in out err code; do
    compared=$((compared + 1))
    if ! cmp -s "$work/$id.before.$part" "$work/$id.after.$part"; then
      differ=$((differ + 1))
      echo "DIFFERS ($part): $name: $*"
      diff <(head -c 2000 "$work/$id.before.$part") <(head -c 2000 "$work/$id.after.$part") | head -10
    fi
  done
  rm -f "$work/$id".*
}

repo=$(pwd)
# check: every format, cold and warm, on the fixtures and the bench corpora.
for corpus in "fixtures:." "fixtures/prompts:." "bench/corpus:. --no-config" "bench/out/realrepo:." "bench/out/fewshot:."; do
  dir=${corpus%%:*}
  read -r -a extra <<<"${corpus#*:}"
  for format in full concise json sarif github; do
    run "check $dir cold $format" "$repo/$dir" check "${extra[@]}" --format "$format" --no-cache
    run "check $dir first cached run $format" "$repo/$dir" check "${extra[@]}" --format "$format" --cache-dir @CACHE@
    run "check $dir warm $format" "$repo/$dir" check "${extra[@]}" --format "$format" --cache-dir @CACHE@
  done
done

# audit: the bench logs, llama.cpp and vLLM, full and JSON.
for log in bench/out/audit-100000.jsonl bench/out/audit-long-15000.jsonl bench/out/agent-20k.jsonl; do
  for format in json full; do
    run "audit $log llama.cpp $format" "$repo" audit "$log" --no-config --engine llama.cpp --format "$format" --fail-on never
  done
done
for log in bench/out/audit-20000.jsonl bench/out/agent-20k.jsonl; do
  for format in json full; do
    run "audit $log vllm $format" "$repo" audit "$log" --no-config --engine vllm:block_size=16 --format "$format" --fail-on never
  done
done
# Every fixture log, each engine, each format (a log a format does not take still compares its error).
while IFS= read -r log; do
  for engine in llama.cpp vllm:block_size=16; do
    for format in json full sarif; do
      run "audit $log $engine $format" "$repo" audit "$log" --no-config --engine "$engine" --format "$format" --fail-on never
    done
  done
done < <(find fixtures/audit tests/fixtures/audit-hosted tests/fixtures/audit-agents tests/fixtures/audit-incremental tests/fixtures/simulate \( -name '*.jsonl' -o -name '*.jsonl.gz' \) | sort)

# simulate: the fixture logs and a bench log.
while IFS= read -r log; do
  for format in json full; do
    run "simulate $log $format" "$repo" simulate "$log" --no-config --kv-blocks 4096 --block-size 16 --replicas 2 --router prefix --ttl 300 --format "$format"
  done
done < <(find tests/fixtures/simulate -name '*.jsonl*' | sort; echo bench/out/audit-20000.jsonl)

echo "compared $compared files ($n runs of each build: stdout, stderr, exit code); $differ differ"
echo "($failed of the $n runs exit 2 on both sides: a log a format or an engine does not take)"
[ "$differ" = 0 ]
