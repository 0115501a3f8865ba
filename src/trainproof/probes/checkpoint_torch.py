"""Inspects a torch.save file (ZIP format, torch >= 1.6; Lightning .ckpt is the same)
without unpickling it: the ZIP directory, every entry's CRC (streamed), the pickle
replayed statically for its globals and tensor table, and each storage's bytes
counted for NaN/Inf/zeros in the same single pass that checks its CRC.

The work per file is bounded, not only per entry: zipsafe refuses a directory that
lists an entry twice, overlaps entries or asks for more inflation than the caps
(ReadCaps, declared in rules/env_checkpoint.py), and the pickle's structure is walked once per
object within a node budget. A refused file is UNREADABLE (could not judge), never OK."""

from __future__ import annotations

import lzma
import struct
import sys
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trainproof.probes.checkpoint_model import OPTIMIZER_KEYS, FileScan, Integrity, ReadCaps, TensorInfo
from trainproof.probes.checkpoint_stats import CHUNK_BYTES, Span, contiguous_span, count_stream, itemsize
from trainproof.probes.pickle_scan import PickleError, Storage, TensorRef, scan_pickle
from trainproof.probes.pickle_walk import WalkLimit, walk_tensors
from trainproof.zipsafe import ZipRefused, check_directory, declared_entries

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
PROGRESS_BYTES = 2 << 30  # progress on a terminal for files past this size


# What opening and reading one entry of a damaged ZIP can raise: a bad local header, a
# local name that is not UTF-8 (UnicodeDecodeError, a ValueError), a compression method
# or stream zipfile cannot inflate (NotImplementedError, zlib/lzma errors, bz2's OSError).
_ENTRY_ERRORS = (zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError, OSError, ValueError, NotImplementedError)


def inspect_torch(path: Path, caps: ReadCaps) -> FileScan:
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(64)
        entries = declared_entries(fh) if head.startswith(b"PK") else None
    if not head.startswith(b"PK"):
        return _not_zip(path, size, head)
    if entries is not None and entries > caps.zip_entries:
        return FileScan(str(path), "torch-zip", Integrity.UNREADABLE, size=size, detail=(
            f"the ZIP directory lists {entries} entries, over the {caps.zip_entries} cap"))
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        return FileScan(str(path), "torch-zip", Integrity.TRUNCATED, size=size, detail=(
            f"the ZIP ends before its central directory ({exc}): the write stopped part-way"))
    except (UnicodeDecodeError, ValueError, OverflowError, NotImplementedError) as exc:
        # zipfile decodes entry names flagged UTF-8 strictly, trusts directory fields and
        # refuses versions it does not know: a directory torch never writes is not a
        # checkpoint we can read
        return FileScan(str(path), "torch-zip", Integrity.UNREADABLE, size=size, detail=(
            f"the ZIP directory cannot be read ({type(exc).__name__}: {exc})"))
    with zf:
        return _inspect_zip(path, size, zf, caps)


def _not_zip(path: Path, size: int, head: bytes) -> FileScan:
    if head[:1] == b"\x80" and _legacy_magic(path):
        return FileScan(str(path), "legacy-pickle", Integrity.LEGACY, size=size, detail=(
            "a pre-1.6 torch.save file: one pickle followed by raw storages, no CRC and no "
            "entry table to verify; re-save it with a current torch to have it checked"))
    return FileScan(str(path), "unknown", Integrity.UNREADABLE, size=size, detail=(
        "neither a torch ZIP checkpoint, a safetensors file nor a legacy torch pickle"))


def _legacy_magic(path: Path) -> bool:
    """The legacy format opens with PROTO then the magic number as a LONG1."""
    import io
    import pickletools

    with path.open("rb") as fh:
        head = io.BytesIO(fh.read(64))  # decoded from a bounded buffer: no declared length is trusted
    try:
        for i, (op, arg, _) in enumerate(pickletools.genops(head)):
            if op.name in ("LONG1", "LONG4", "INT", "LONG"):
                return arg == LEGACY_MAGIC
            if i > 3:
                return False
    except Exception:  # any malformed head is simply not the legacy format
        return False
    return False


def _inspect_zip(path: Path, size: int, zf: zipfile.ZipFile, caps: ReadCaps) -> FileScan:
    infos = zf.infolist()
    pkl = next((i for i in infos if i.filename.endswith("data.pkl")), None)
    scan = FileScan(str(path), "torch-zip", Integrity.OK, size=size)
    if pkl is None:
        scan.integrity, scan.detail = Integrity.UNREADABLE, "a ZIP without data.pkl: not a torch checkpoint"
        return scan
    problem = _extent_problem(path, infos, size)
    if problem:
        scan.integrity, scan.detail = problem
        return scan
    try:
        check_directory(zf, path, caps.zip_limits())
    except ZipRefused as exc:
        scan.integrity, scan.detail = Integrity.UNREADABLE, str(exc)
        return scan
    prefix = pkl.filename[: -len("data.pkl")]
    if pkl.file_size > caps.pickle_bytes:
        scan.integrity = Integrity.UNREADABLE
        scan.detail = f"{pkl.filename} declares {pkl.file_size} bytes, over the {caps.pickle_bytes}-byte cap: not read"
        return scan
    try:
        data = _read_capped(zf, pkl, caps.pickle_bytes)
        result = scan_pickle(data)
    except _ENTRY_ERRORS as exc:
        scan.integrity, scan.detail = Integrity.CORRUPT, f"{pkl.filename}: {exc}"
        return scan
    except PickleError as exc:
        scan.integrity, scan.detail = Integrity.CORRUPT, f"{pkl.filename} is not a valid pickle: {exc}"
        return scan
    scan.globals = result.globals
    try:
        refs = walk_tensors(result.root, caps.pickle_nodes)
        _describe_root(scan, result.root, caps.pickle_nodes)
    except WalkLimit as exc:
        scan.integrity, scan.detail = Integrity.UNREADABLE, f"{pkl.filename}: {exc}"
        return scan
    order = _byteorder(zf, prefix)
    spans = _spans(scan, refs)
    _stream_entries(scan, zf, infos, prefix, spans, order)
    return scan


def _extent_problem(path: Path, infos: list[zipfile.ZipInfo], size: int) -> tuple[Integrity, str] | None:
    """Every entry's data must lie inside the file. The local header's extra field (torch pads
    it to align storages) is read from the local header itself: the central one differs."""
    with path.open("rb") as fh:
        for i in infos:
            fh.seek(i.header_offset)
            head = fh.read(30)
            if len(head) < 30 or head[:4] != b"PK\x03\x04":
                return Integrity.TRUNCATED if len(head) < 30 else Integrity.CORRUPT, (
                    f"no local header for entry {i.filename} at byte {i.header_offset}")
            name_len, extra_len = struct.unpack("<HH", head[26:30])
            end = i.header_offset + 30 + name_len + extra_len + i.compress_size
            if end > size:
                return Integrity.TRUNCATED, (f"entry {i.filename} extends to byte {end} but the file "
                                             f"has {size}: the write stopped part-way")
    return None


def _read_capped(zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int) -> bytes:
    with zf.open(info) as fh:
        return fh.read(cap + 1)[:cap]


def _byteorder(zf: zipfile.ZipFile, prefix: str) -> str:
    try:
        text = _read_capped(zf, zf.getinfo(prefix + "byteorder"), 16).decode("ascii", "replace").strip()
    except (KeyError, *_ENTRY_ERRORS):  # the CRC pass reports a bad entry
        return "<"
    return ">" if text == "big" else "<"


def _describe_root(scan: FileScan, root: Any, max_nodes: int) -> None:
    if not isinstance(root, dict):
        return
    scan.top_keys = [str(k) for k in root]
    for key in OPTIMIZER_KEYS:
        if key in root:
            scan.optimizer_state = len(walk_tensors(root[key], max_nodes))
            return


def _spans(scan: FileScan, refs: list[tuple[str, TensorRef]]) -> dict[str, tuple[Storage, list[Span]]]:
    by_key: dict[str, tuple[Storage, list[Span]]] = {}
    for name, ref in refs:
        numel = 1
        for d in ref.shape:
            numel *= d
        t = TensorInfo(name, ref.dtype, ref.shape, numel)
        scan.tensors.append(t)
        entry = by_key.setdefault(ref.storage.key, (ref.storage, []))
        span = contiguous_span(t, ref.offset, ref.stride)
        if span is None:
            t.unmeasured_why = "a strided view of a shared storage"
        elif ref.storage.numel >= 0 and span.stop > ref.storage.numel:
            t.unmeasured_why = "extends past its storage"
            scan.integrity = Integrity.CORRUPT
            scan.detail = f"tensor {name} extends past the end of storage {ref.storage.key}"
        else:
            entry[1].append(span)
    return by_key


def _stream_entries(scan: FileScan, zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo], prefix: str,
                    spans: dict[str, tuple[Storage, list[Span]]], order: str) -> None:
    """Read every entry once: CRC for all, counts for the storages the pickle names."""
    present = {i.filename for i in infos}
    for key, (st, _) in spans.items():
        name = f"{prefix}data/{key}"
        if name not in present:
            scan.integrity, scan.detail = Integrity.CORRUPT, f"storage {name} named by the pickle is absent"
            return
        size = itemsize(st.dtype)
        want = st.numel * size if size and st.numel >= 0 else None
        info = zf.getinfo(name)
        if want is not None and info.file_size < want:
            scan.integrity, scan.detail = Integrity.CORRUPT, (
                f"storage {name} holds {info.file_size} bytes, the pickle says {want}")
            return
    progress = _Progress(scan.path, scan.size)
    for info in infos:
        key = info.filename[len(prefix) + len("data/"):] if info.filename.startswith(prefix + "data/") else None
        st_spans = spans.get(key) if key is not None else None
        try:
            chunks = _chunks(zf, info, progress)
            if st_spans is not None:
                count_stream(chunks, st_spans[0].dtype, st_spans[1], order)
            for _ in chunks:
                pass
        except _ENTRY_ERRORS as exc:
            scan.integrity, scan.detail = Integrity.CORRUPT, f"{info.filename}: {exc}"
            return
    progress.done()


def _chunks(zf: zipfile.ZipFile, info: zipfile.ZipInfo, progress: _Progress) -> Iterator[bytes]:
    with zf.open(info) as fh:
        while True:
            chunk = fh.read(CHUNK_BYTES)
            if not chunk:
                return
            progress.add(len(chunk))
            yield chunk


class _Progress:
    """Bytes read so far, on stderr, for multi-GB files on an interactive terminal only."""

    def __init__(self, path: str, total: int) -> None:
        self.path, self.total, self.read, self.shown = path, total, 0, -1
        self.on = total >= PROGRESS_BYTES and sys.stderr.isatty()

    def add(self, n: int) -> None:
        self.read += n
        pct = int(100 * self.read / max(self.total, 1))
        if self.on and pct // 5 != self.shown:
            self.shown = pct // 5
            sys.stderr.write(f"\rtrainproof: reading {self.path}: {pct}%")
            sys.stderr.flush()

    def done(self) -> None:
        if self.on:
            sys.stderr.write("\n")
