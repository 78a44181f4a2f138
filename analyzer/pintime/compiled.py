"""Compiled kernels: numba's ``njit``, cached on disk in a folder that follows the package's sources.

numba checks only the file that defines a cached kernel, not the files of the functions it calls (a
kernel of one module calling one of another), so after an upgrade or an edit of those the old machine
code would run on, silently. The cache folder is therefore keyed by the bytes of every source file of
the package (≈ 7 ms to hash): any change gives a new folder, which replaces the others. It lies in the
package's ``__pycache__``, or under ``NUMBA_CACHE_DIR`` if that is set. Importing this module sets numba's
cache folder for the process (numba reads it as each kernel is defined).
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba


def cache_dir(package: Path, parent: Path) -> Path:
    """The folder under ``parent`` for this state of the sources of ``package``, made the only one there."""
    key = hashlib.sha1()
    for path in sorted(package.rglob("*.py")):
        key.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    folder = parent / f"numba-{key.hexdigest()[:16]}"
    if not folder.exists():
        for old in parent.glob("numba-*"):
            shutil.rmtree(old, ignore_errors=True)
    return folder


_PACKAGE = Path(__file__).parent
_USER = numba.config.CACHE_DIR  # type: ignore[attr-defined]  # from NUMBA_CACHE_DIR, if set
numba.config.CACHE_DIR = str(  # type: ignore[attr-defined]
    cache_dir(_PACKAGE, Path(_USER) / "pintime" if _USER else _PACKAGE / "__pycache__"))


def kernel(function: Callable | None = None, **options: Any) -> Any:
    """``numba.njit(cache=True, nogil=True, **options)``, as ``@kernel`` or ``@kernel(option=…)``."""
    jit = numba.njit(cache=True, nogil=True, **options)
    return jit if function is None else jit(function)
