"""`trainproof tokenizer` on a SentencePiece model needs sentencepiece and nothing else:
the pieces' ids and offsets are read from the serialized SentencePieceText here, not
through sentencepiece's `proto` return type, which imports the protobuf package (no
extra of ours declares it). The decoder agrees with protobuf's where protobuf is
installed, and the command runs in a child in which importing protobuf fails.
scripts/check_tokenizer_without_protobuf.sh makes the same check in a clean venv."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .craft import SRC
from .test_tokenizer import corpus, train_spm, transcripts

spm = pytest.importorskip("sentencepiece")

TEXTS = ["The cat sat on the mat", "héllo wörld ☃ øre", "", "  spaced   out  ", "日本語のテキスト"]

_BLOCKED = """
import sys
for name in ("google.protobuf", "google.protobuf.message", "google.protobuf.descriptor"):
    sys.modules[name] = None  # any `import google.protobuf...` now raises ImportError
from trainproof.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def test_pieces_match_protobufs_decoding(tmp_path):
    pytest.importorskip("google.protobuf")
    from trainproof.probes.tokenizer_load import _spt_pieces

    sp = spm.SentencePieceProcessor(model_file=str(train_spm(tmp_path / "sp")))
    for text in TEXTS:
        blob = sp.encode(text, out_type="serialized_proto")
        oracle = sp.encode(text, out_type="proto").pieces
        assert [(p.id, p.start, p.end) for p in _spt_pieces(blob)] == [(p.id, p.begin, p.end) for p in oracle]


def test_tokenizer_command_runs_with_protobuf_unimportable(tmp_path):
    model = train_spm(tmp_path / "sp")
    rows = [(s, 2.0) for s in corpus(20)] + [("The cat sat on the mat ☃ øre", 2.0)]
    tr = transcripts(tmp_path / "t.jsonl", rows)
    res = subprocess.run([sys.executable, "-c", _BLOCKED, "tokenizer", str(model), str(tr), "--json"],
                         capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(SRC)})
    assert "ImportError" not in res.stdout + res.stderr and "Traceback" not in res.stderr, res.stderr
    doc = json.loads(res.stdout)
    assert res.returncode == 1 and doc["error"] is None
    ids = {f["id"] for r in doc["reports"] for f in r["findings"]}
    assert "TP-TOK-HIGH-OOV" in ids  # the unknown characters were counted through the pieces' ids
