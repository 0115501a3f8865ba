"""Native decoders write to descriptor 2 behind Python's back; `data` keeps them off
stderr (one line at most) while Python's own stderr still reaches the terminal."""

from __future__ import annotations

import os
import sys

from trainproof.probes.native_stderr import native_stderr_silenced


def test_descriptor_2_is_silenced_and_python_stderr_is_not(capfd):
    with native_stderr_silenced():
        os.write(2, b"Note: Illegal Audio-MPEG-Header 0x00000000\n")  # what mpg123 does
        sys.stderr.write("kept\n")
    os.write(2, b"after\n")
    err = capfd.readouterr().err
    assert "Illegal" not in err
    assert "kept" in err and "after" in err


def test_undecodable_mp3_notes_stay_off_stderr(tmp_path, capfd):
    from trainproof.cli import main

    d = tmp_path / "clips"
    d.mkdir()
    (d / "a.mp3").write_bytes(b"\x00" * 3000)  # mpg123 resyncs over this, noisily
    (d / "b.wav").write_bytes(os.urandom(3000))
    code = main(["data", str(d), "--workers", "1"])
    err = capfd.readouterr().err
    assert code in (1, 2) and "Note:" not in err
