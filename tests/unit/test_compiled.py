"""The compiled kernels' cache folder follows every source file of the package."""

from __future__ import annotations

import os
from pathlib import Path

import numba
from pintime.compiled import cache_dir


def test_cache_folder_changes_with_any_source_file_and_replaces_the_old(tmp_path: Path):
    """numba checks only a kernel's own file: an edit of another file (a kernel it calls) must give a new
    folder, and the old folder goes."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "kernels.py").write_text("def f(x):\n    return g(x)\n")
    (package / "sub" / "called.py").write_text("def g(x):\n    return x + 1\n")
    parent = tmp_path / "cache"
    first = cache_dir(package, parent)
    first.mkdir(parents=True)
    assert cache_dir(package, parent) == first  # nothing changed: the same folder, kept
    assert first.exists()
    (package / "sub" / "called.py").write_text("def g(x):\n    return x + 2\n")
    second = cache_dir(package, parent)
    assert second != first and not first.exists()


def test_pintime_kernels_are_cached_in_that_folder():
    """Importing pintime's kernels points numba's cache at the folder for the package's sources."""
    import pintime.compiled

    package = Path(pintime.compiled.__file__).parent
    user = os.environ.get("NUMBA_CACHE_DIR")
    parent = Path(user) / "pintime" if user else package / "__pycache__"
    assert Path(numba.config.CACHE_DIR) == cache_dir(package, parent)
