"""The static pickle reader: every protocol's opcodes are replayed without running
anything, malformed streams fail with PickleError only, and a payload that would run
code is listed by name while the code never runs."""

from __future__ import annotations

import collections
import contextlib
import os
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainproof.probes.pickle_scan import PickleError, scan_pickle


class _Touch:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("protocol", range(0, pickle.HIGHEST_PROTOCOL + 1))
def test_every_protocol_is_replayed(protocol):
    obj = {"a": [1, 2.5, "x", b"raw", None, True], "b": collections.OrderedDict(k=(1, 2)), "c": {3, 4}}
    scan = scan_pickle(pickle.dumps(obj, protocol=protocol))
    assert scan.root["a"][:4] == [1, 2.5, "x", b"raw"]
    assert "collections.OrderedDict" in scan.globals


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_payload_is_named_and_never_run(tmp_path, protocol):
    marker = tmp_path / "RAN"
    scan = scan_pickle(pickle.dumps({"x": _Touch(marker)}, protocol=protocol))
    assert f"{os.system.__module__}.system" in scan.globals
    assert not marker.exists()


def test_truncated_stream_is_a_pickle_error():
    data = pickle.dumps({"a": list(range(100))}, protocol=2)
    with pytest.raises(PickleError):
        scan_pickle(data[: len(data) // 2])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_escape_as_another_error(data):
    with contextlib.suppress(PickleError):  # any other exception type fails the test
        scan_pickle(data)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=255))
def test_flipped_bytes_of_a_real_pickle_never_escape(pos, value):
    data = bytearray(pickle.dumps({"w": [1.0, 2.0], "k": collections.OrderedDict(a=1)}, protocol=2))
    data[pos % len(data)] = value
    with contextlib.suppress(PickleError):
        scan_pickle(bytes(data))
