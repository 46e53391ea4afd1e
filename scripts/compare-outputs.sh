#!/usr/bin/env bash
# Runs the same commands with two prefixlint binaries and compares what each writes (stdout,
# stderr, exit code) byte for byte: `check` in every format, `audit`, `simulate`, `render`,
# `samples` and `capacity`, on the fixture corpora and the bench corpora. For a change that
# must not change any output (issue 41: settings resolved once).
#
# usage: scripts/compare-outputs.sh OLD_PREFIXLINT NEW_PREFIXLINT [OUT_DIR]
# The bench corpora are generated (deterministically) when missing, as bench/targets.sh does.
# Prints one line per difference, then the count of files compared; exits 1 on a difference.
set -uo pipefail
cd "$(dirname "$0")/.."
old=$(realpath "$1")
new=$(realpath "$2")
out=${3:-bench/out/compare}
rm -rf "$out"
mkdir -p "$out/old" "$out/new"
export PREFIXLINT_NO_CACHE=1 NO_COLOR=1
unset GITHUB_ACTIONS GITHUB_STEP_SUMMARY
python=${PYTHON:-python3}

mkdir -p bench/out
[ -d bench/corpus ] || "$python" bench/gen_corpus.py bench/corpus --templates 1000 >/dev/null
[ -d bench/out/realrepo ] || "$python" bench/gen_realrepo.py bench/out/realrepo --templates 500 >/dev/null
[ -d bench/out/fewshot ] || "$python" bench/gen_fewshot.py bench/out/fewshot --templates 2000 >/dev/null
[ -f bench/out/compare-audit.jsonl ] ||
  "$python" bench/audit.py --generate bench/out/compare-audit.jsonl 3000 >/dev/null
[ -f bench/out/compare-audit-long.jsonl ] ||
  "$python" bench/audit.py --generate bench/out/compare-audit-long.jsonl 1000 --shape long >/dev/null

runs=0
# run NAME ARGS...: both binaries, from the repository root.
run() {
  local name=$1
  shift
  for side in old new; do
    local bin=$old
    [ "$side" = new ] && bin=$new
    "$bin" "$@" >"$out/$side/$name.out" 2>"$out/$side/$name.err"
    echo $? >"$out/$side/$name.rc"
  done
  runs=$((runs + 1))
}

# check: every format, on each fixture folder (its own config) and the bench corpora.
for format in full concise json sarif github; do
  for dir in fixtures/*/ fixtures/*/*/ tests/fixtures/failures tests/fixtures/hosts; do
    [ -n "$(find "$dir" -maxdepth 3 -type f \( -name '*.j2' -o -name '*.jinja' -o -name '*.jinja2' -o -name '*.prompt' -o -name '*.yaml' -o -name '*.py' -o -name '*.prompty' \) -print -quit)" ] || continue
    run "check-$format-$(echo "$dir" | tr '/' '_')" check "$dir" --format "$format"
  done
  for corpus in bench/corpus bench/out/realrepo bench/out/fewshot; do
    run "check-$format-$(echo "$corpus" | tr '/' '_')" check "$corpus" --format "$format"
  done
done
# check through chat templates, by flag and by the fixtures' configs; engines by flag.
for template in fixtures/chat-templates/*.jinja; do
  name=$(basename "$template" .jinja)
  run "check-chat-$name" check fixtures/prompts --chat-template "$template" --format json
done
for engine in vllm vllm:block_size=32 sglang:page_size=4 llama.cpp tgi:backend=paged openai:model=gpt-4.1 anthropic deepseek; do
  run "check-engine-$engine" check fixtures/prompts --engine "$engine" --format full
  run "check-engine-json-$engine" check bench/out/realrepo --engine "$engine" --format json
done
run check-no-special-tokens check fixtures/prompts --no-special-tokens --format json
[ -f bench/out/tokenizer.json ] || gzip -dc assets/qwen3/tokenizer.json.gz > bench/out/tokenizer.json
run check-tokenizer-file check fixtures/prompts --tokenizer bench/out/tokenizer.json --format json

# audit and simulate: the fixture logs and two generated ones.
logs="fixtures/audit/requests.jsonl tests/fixtures/simulate/helpdesk.jsonl tests/fixtures/simulate/support-desk.jsonl.gz tests/fixtures/audit-agents/agents.jsonl bench/out/compare-audit.jsonl bench/out/compare-audit-long.jsonl"
for log in $logs; do
  base=$(basename "$log")
  # The generated logs carry no times: simulate replays them at a fixed rate.
  rate=()
  case "$log" in bench/out/*) rate=(--rate 20) ;; esac
  for format in full json sarif; do
    run "audit-$format-$base" audit "$log" --format "$format" --fail-on never
  done
  for engine in vllm:block_size=16 llama.cpp openai anthropic; do
    run "audit-engine-$engine-$base" audit "$log" --engine "$engine" --format json --fail-on never
  done
  for format in full json; do
    run "simulate-$format-$base" simulate "$log" --kv-blocks 64 --format "$format" "${rate[@]}"
  done
  run "simulate-llamacpp-$base" simulate "$log" --engine llama.cpp --slots 2 --format json "${rate[@]}"
  run "simulate-sglang-$base" simulate "$log" --engine sglang --kv-blocks 64 --block-size 4 --format json "${rate[@]}"
  run "simulate-sweep-$base" simulate "$log" --kv-blocks 64 --replicas 2 --router prefix --format json "${rate[@]}"
done
for log in tests/fixtures/audit-hosted/*.jsonl; do
  base=$(basename "$log")
  run "audit-hosted-$base" audit "$log" --format json --fail-on never
done

# render: plain templates (fixed clock), chat requests through chat templates, tokens.
now=2026-01-02T03:04:05Z
for template in $(find fixtures/prompts fixtures/readme -name '*.j2' -o -name '*.jinja' | sort); do
  name=$(echo "$template" | tr '/' '_')
  run "render-$name" render "$template" --now "$now"
  run "render-tokens-$name" render "$template" --now "$now" --tokens
  run "samples-$name" samples "$template"
done
for messages in fixtures/chat-conversations/*.yaml; do
  for template in $(ls fixtures/chat-templates/*.jinja | head -12); do
    name=$(basename "$messages" .yaml)-$(basename "$template" .jinja)
    run "render-chat-$name" render --messages "$messages" --chat-template "$template" --now "$now"
  done
  run "render-chat-tokens-$(basename "$messages")" render --messages "$messages" \
    --chat-template assets/qwen3/tokenizer_config.json --now "$now" --tokens
done

# capacity: each model config, both formats.
for model in fixtures/capacity/*/config.json; do
  name=$(basename "$(dirname "$model")")
  for format in full json; do
    run "capacity-$format-$name" capacity --model-config "$model" --gpu-memory 80GB --params 8B --format "$format"
  done
done

differ=0
files=0
for path in "$out"/old/*; do
  files=$((files + 1))
  file=$(basename "$path")
  if ! cmp -s "$path" "$out/new/$file"; then
    echo "differs: $file"
    differ=$((differ + 1))
  fi
done
echo "$runs commands run with each binary; $files files compared (stdout, stderr, exit code); $differ differ"
[ "$differ" -eq 0 ]
