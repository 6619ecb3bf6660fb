"""The line before a cold compile (issue 39): what compiles, why, and how long it took here last
time (or the reference machine's figure); the compile's duration kept in the cache folder.

Fake dispatchers stand in for numba's (the attributes the notice reads: ``signatures``,
``stats.cache_misses``, ``stats.cache_path`` and the cache index), so no kernel compiles here;
``tests/test_install.py`` sees the real lines in a fresh install."""

from __future__ import annotations

import json
import logging
import os
from types import SimpleNamespace

import pytest

from mixlinreg import _firstuse


class _Index:
    def __init__(self, entries):
        self.entries = entries

    def _load_index(self):
        return dict(self.entries)


class _FakeDispatcher:
    """Compiles (a cache miss, a new signature, an index entry) on its first call."""

    def __init__(self, folder, cached=False):
        self.signatures = []
        self.stats = SimpleNamespace(cache_misses={}, cache_path=str(folder))
        self._cache = SimpleNamespace(_cache_file=_Index({"sig": 1} if cached else {}),
                                      cache_path=str(folder))

    def __call__(self):
        if not self.signatures:
            self.signatures.append("sig")
            self.stats.cache_misses["sig"] = 1
            self._cache._cache_file.entries["sig"] = 1
        return 7


def _path(folder, cached=(False, False)):
    disps = [_FakeDispatcher(folder, c) for c in cached]

    def run():
        return [d() for d in disps][0]

    return _firstuse.announce_compile_path(run, disps, "the test kernel"), disps


def _lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "mixlinreg"]


def test_a_cold_path_says_so_before_and_after_and_keeps_the_time(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="mixlinreg")
    call, _ = _path(tmp_path)
    assert call() == 7
    before, after = _lines(caplog)
    assert before.startswith("mixlinreg: compiling the test kernel with numba before its first use")
    assert str(tmp_path) in before and _firstuse.REFERENCE_COMPILE in before
    assert after.startswith("mixlinreg: numba compiled the test kernel (2 kernels)")
    times = json.loads((tmp_path / _firstuse.COMPILE_TIMES).read_text())
    assert set(times) == {"the test kernel"} and times["the test kernel"] >= 0
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    caplog.clear()
    assert call() == 7  # compiled in this process: nothing said
    assert _lines(caplog) == []
    # a new process after an edit (empty indexes again): the time measured here is quoted
    (tmp_path / _firstuse.COMPILE_TIMES).write_text(json.dumps({"the test kernel": 42.4}))
    again, _ = _path(tmp_path)
    again()
    assert "the last time it compiled here it took 42 s" in _lines(caplog)[0]


def test_no_line_before_when_some_kernel_is_cached(tmp_path, caplog):
    """Another dtype next to cached code: only the line after the compile."""
    caplog.set_level(logging.WARNING, logger="mixlinreg")
    call, _ = _path(tmp_path, cached=(True, False))
    call()
    lines = _lines(caplog)
    assert len(lines) == 1 and lines[0].startswith("mixlinreg: numba compiled the test kernel (2")


@pytest.mark.skipif(os.name == "nt" or os.geteuid() == 0, reason="root writes read-only folders")
def test_a_folder_that_cannot_be_written_keeps_no_time_and_raises_nothing(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="mixlinreg")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        call, _ = _path(folder)
        assert call() == 7
        assert not (folder / _firstuse.COMPILE_TIMES).exists()
    finally:
        folder.chmod(0o700)


def test_a_damaged_record_is_ignored(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="mixlinreg")
    (tmp_path / _firstuse.COMPILE_TIMES).write_text("{not json")
    call, _ = _path(tmp_path)
    call()
    assert _firstuse.REFERENCE_COMPILE in _lines(caplog)[0]
    assert "the test kernel" in json.loads((tmp_path / _firstuse.COMPILE_TIMES).read_text())


def test_the_benchmarks_page_quotes_the_notice_as_it_reads():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "BENCHMARKS.md").read_text()
    block = text.split("What a user sees on a cold cache now", 1)[1].split("```text", 1)[1]
    block = " ".join(block.split("```", 1)[0].split())
    assert _firstuse.REFERENCE_COMPILE in block
    assert block.startswith("mixlinreg: compiling the certified-Gram path with numba before its "
                            "first use (no machine code is cached for this version of the package")
