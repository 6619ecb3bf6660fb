"""A damaged compiled-kernel cache file (a truncated .nbc, a garbage .nbi) is named, removed and
rebuilt, never an unpickling error in every later command (mixlinreg._cache.guard_cache_files)."""

import os
import subprocess
import sys


def _value_in_subprocess(cache_dir):
    code = ("import mixlinreg.losses as L, numpy as np; "
            "print(float(L.LOSSES['squared'].value(np.array([3.0]), np.array([1.0]))[0]))")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    env.pop("NUMBA_DISABLE_JIT", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=600)


def test_a_damaged_cache_file_is_named_removed_and_rebuilt(tmp_path):
    first = _value_in_subprocess(tmp_path)
    assert first.returncode == 0 and first.stdout.strip() == "4.0", first.stderr
    data = sorted(tmp_path.rglob("losses*.nbc"))
    index = sorted(tmp_path.rglob("losses*.nbi"))
    assert data and index
    data[0].write_bytes(data[0].read_bytes()[:20])  # a copy cut short
    second = _value_in_subprocess(tmp_path)
    assert second.returncode == 0 and second.stdout.strip() == "4.0", second.stderr
    assert "was damaged" in second.stderr and data[0].name in second.stderr
    index[0].write_bytes(b"garbage, not a pickle")
    third = _value_in_subprocess(tmp_path)
    assert third.returncode == 0 and third.stdout.strip() == "4.0", third.stderr
    assert "was damaged" in third.stderr and index[0].name in third.stderr
    fourth = _value_in_subprocess(tmp_path)  # rebuilt: read quietly again
    assert fourth.returncode == 0 and "damaged" not in fourth.stderr
