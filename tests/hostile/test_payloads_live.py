"""The campaign's pickle payloads are live: loaded by `pickle.loads` (in a child
process, in a temporary folder) each one creates its marker file. So "no marker
after the campaign" means trainproof executed none of them, not that they were duds."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.hostile.gen_ckpt import PAYLOADS, payload

LOAD = "import pickle, sys; pickle.loads(open(sys.argv[1], 'rb').read())"


@pytest.mark.parametrize("kind", PAYLOADS)
def test_payload_creates_its_marker_when_unpickled(kind, tmp_path):
    marker = tmp_path / "EXECUTED"
    blob = tmp_path / "payload.pkl"
    blob.write_bytes(payload(kind, marker))
    subprocess.run([sys.executable, "-c", LOAD, str(blob)], cwd=tmp_path, capture_output=True, timeout=60)
    deadline = time.monotonic() + 10  # os.system and Popen may finish after the loader exits
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), f"the {kind} payload did not run under pickle.loads"
