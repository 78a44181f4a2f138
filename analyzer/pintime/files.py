"""The user's files: JSON read with one clear line for any damage, results never written over an input or
a file that travels with one, and every result written whole or not at all."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from pintime.errors import PintimeError


def read_json(path: str | Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path`` (``what`` names it in errors: "truth JSON", "CFG JSON"…).

    Raises
    ------
    PintimeError
        Unreadable file, not UTF-8, not JSON (also: nested too deep to parse), or not a JSON object.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise PintimeError(f"{path}: cannot read the {what} ({err.strerror or err})") from None
    except (ValueError, UnicodeDecodeError) as err:  # JSONDecodeError is a ValueError
        raise PintimeError(f"{path}: the {what} is not JSON ({err})") from None
    except RecursionError:
        raise PintimeError(f"{path}: the {what} is nested too deep to be one") from None
    if not isinstance(data, dict):
        raise PintimeError(f"{path}: the {what} is not a JSON object")
    return data


# Files of one run or capture share a prefix: ``table1.edges.csv`` beside ``table1.json`` (the truth),
# ``table1.vcd`` and ``table1.visits.csv``; ``my.wav`` beside ``my.json`` (its sidecar, with the gap list).
# A WAV rendered or recorded from a run is a result, not a companion: ``x.edges.csv`` may become ``x.wav``.
RUN_SUFFIXES = (".edges.csv", ".visits.csv", ".blocks.json", ".json", ".vcd")
CAPTURE_SUFFIX = ".wav"


def companions(path: Path) -> list[Path]:
    """The files that travel with the input ``path``: those of its run or capture (``RUN_SUFFIXES`` on its
    prefix), beside it and beside the file it links to."""
    found = []
    for where in dict.fromkeys((path, path.resolve())):
        name = where.name
        suffix = next((s for s in (*RUN_SUFFIXES, CAPTURE_SUFFIX) if name.endswith(s)), None)
        prefix = None if suffix is None else name.removesuffix(suffix)
        if prefix:
            found += [where.with_name(prefix + s) for s in RUN_SUFFIXES]
    return found


def refuse_overwrite(outputs: list[str | Path | None], inputs: list[str | Path | None]) -> None:
    """PintimeError if an output is one of the inputs or a companion of one (:func:`companions`: a capture's
    sidecar, a run's truth JSON, edge list, VCD…) by any path (symlink, relative, hard link), or two
    outputs are the same file."""
    def same(a: Path, b: Path) -> bool:
        if a.resolve() == b.resolve():
            return True
        try:
            return a.samefile(b)  # hard links
        except OSError:
            return False
    given = [Path(p) for p in inputs if p is not None]
    travelling = [(c, p) for p in given for c in companions(p)]
    written: list[Path] = []
    for out in (Path(p) for p in outputs if p is not None):
        hit = next((p for p in given if same(out, p)), None)
        if hit is not None:
            raise PintimeError(f"{out}: refusing to overwrite the input {hit}")
        hit = next((p for c, p in travelling if same(out, c)), None)
        if hit is not None:
            raise PintimeError(f"{out}: refusing to overwrite a file that belongs with the input {hit} "
                               "(its sidecar, truth, edges, VCD or visits)")
        if any(same(out, w) for w in written):
            raise PintimeError(f"{out}: given for two outputs")
        written.append(out)


def refuse_existing(outputs: list[Path], force: bool) -> None:
    """PintimeError naming the first output that is a folder, or that exists unless ``force``."""
    for path in outputs:
        if path.is_dir():
            raise PintimeError(f"{path}: is a folder; the output needs a file name")
        if path.exists() and not force:
            raise PintimeError(f"{path}: exists; refusing to overwrite it (--force to replace it)")


@contextmanager
def whole_or_nothing(path: str | Path) -> Iterator[Path]:
    """A temporary file beside ``path`` to write into, renamed over ``path`` when the block ends normally
    and removed when it does not, so an interrupted or failed write (a full disk, a signal) leaves the old
    file or none, never a part. PintimeError naming ``path`` for an OSError (a folder, no such folder, no
    space…)."""
    path = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
        os.close(fd)
        # mkstemp's is 0600: the file gets the mode any new file would (chmod: Windows has no fchmod
        # before Python 3.13, and there only the read-only bit applies)
        os.chmod(tmp, _mode_for(path))
        yield Path(tmp)
        if path.is_dir():
            raise IsADirectoryError(21, "Is a directory")
        os.replace(tmp, path)
    except OSError as err:
        raise PintimeError(f"{path}: cannot write ({err.strerror or err})") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def _mode_for(path: Path) -> int:
    """The permissions ``path`` keeps if it exists, else those the process's umask gives a new file."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def write_text(path: str | Path, text: str) -> None:
    """Write a result file whole or not at all (:func:`whole_or_nothing`): UTF-8 with LF line ends on every
    OS (Windows' text mode would write CR LF), the same bytes wherever it is made."""
    with whole_or_nothing(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")


def sidecar_path(wav_path: str | Path) -> Path:
    """``CAPTURE.json`` next to ``CAPTURE.wav``."""
    return Path(wav_path).with_suffix(".json")


def version() -> str:
    """pintime's installed version, stamped into the sidecars it writes."""
    try:
        return metadata.version("pintime")
    except metadata.PackageNotFoundError:
        return "unknown"
