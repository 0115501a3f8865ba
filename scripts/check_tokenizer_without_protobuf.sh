#!/usr/bin/env bash
# `trainproof tokenizer` on a SentencePiece model in a clean venv that has trainproof
# and sentencepiece and NOT protobuf: what a user gets from `pip install
# trainproof[tokenizers]`-minus-transformers. Exit 0 when the command judges the model
# (exit 0 or 1, no ImportError); anything else fails.
#
#   scripts/check_tokenizer_without_protobuf.sh            # venv in /tmp/venv-noproto
#   VENV=/somewhere scripts/check_tokenizer_without_protobuf.sh
#
# Needs PyPI (numpy, sentencepiece, setuptools for the editable install).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-/tmp/venv-noproto}"
python3 -m venv --clear "$VENV"  # no --system-site-packages: the system may hold protobuf
"$VENV/bin/pip" install -q -e "$ROOT" sentencepiece
if "$VENV/bin/python" -c "import google.protobuf" 2>/dev/null; then
    echo "protobuf is importable in $VENV: this check would prove nothing" >&2
    exit 1
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$VENV/bin/python" - "$WORK" <<'PY'
import sys
from pathlib import Path

import sentencepiece as spm

work = Path(sys.argv[1])
words = "the quick brown fox jumps over a lazy dog while birds sing in the tall green trees".split()
lines = [" ".join(words[(i + k) % len(words)] for k in range(8)) for i in range(200)]
(work / "corpus.txt").write_text("\n".join(lines) + "\n")
spm.SentencePieceTrainer.train(input=str(work / "corpus.txt"), model_prefix=str(work / "sp"),
                               vocab_size=40, model_type="unigram", character_coverage=1.0, minloglevel=2)
(work / "t.txt").write_text("\n".join(lines[:30] + ["the fox sat on 2023-05-12 ☃ øre"]) + "\n")
PY
set +e
"$VENV/bin/trainproof" tokenizer "$WORK/sp.model" "$WORK/t.txt" >"$WORK/out.txt" 2>"$WORK/err.txt"
rc=$?
set -e
cat "$WORK/err.txt" >&2
if [ "$rc" -gt 1 ] || grep -q "ImportError\|Traceback" "$WORK/out.txt" "$WORK/err.txt"; then
    echo "FAILED: trainproof tokenizer exit $rc without protobuf" >&2
    tail -20 "$WORK/out.txt" >&2
    exit 1
fi
echo "ok: trainproof tokenizer judged a SentencePiece model without protobuf (exit $rc)"
