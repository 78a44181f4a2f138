#!/bin/sh
# `pip install ./analyzer` alone, as a user on any OS installs pintime (no make, no apt, no dev extras), gives
# a working `pintime`: in a fresh venv in a temporary folder, the installed command analyses a committed
# capture exactly as tests/golden has it, finds the same edges as the development tree, and its recorder
# reaches PortAudio (a device list, or one error line where there is no sound card). Without sounddevice
# and matplotlib the analysis stays the same and `record` says in one line what is missing.
# `make check-install`; run from anywhere.
set -eu
cd "$(dirname "$0")/.."
CAPTURE=captures/table1-default.wav
GOLDEN=tests/golden/table1-default.txt
PYTHON=${PYTHON:-python3}
DEV_PINTIME=${DEV_PINTIME:-.venv/bin/pintime}  # the development tree's (editable) install, for the edges
NO_SOUNDDEVICE="pintime: error: pintime record needs the sounddevice package: pip install sounddevice"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
venv="$tmp/venv"
say() { echo "check-install: $*"; }
fail() { echo "check-install: FAILED: $*" >&2; exit 1; }
# Nothing of the development environment may leak into the installed one.
unset PYTHONPATH NUMBA_CACHE_DIR VIRTUAL_ENV

# `pintime ARGS…` of the fresh venv, stdout to $tmp/out and stderr to $tmp/err; its exit status in $status.
installed() {
  status=0
  "$venv/bin/pintime" "$@" > "$tmp/out" 2> "$tmp/err" || status=$?
}

# The installed `pintime analyze` succeeds, prints nothing on stderr and exactly the golden file.
analyze_is_golden() {
  installed analyze "$CAPTURE"
  [ "$status" -eq 0 ] && [ ! -s "$tmp/err" ] || fail "pintime analyze $CAPTURE ($1): $(cat "$tmp/err")"
  diff -u "$GOLDEN" "$tmp/out" || fail "the installed pintime's analysis ($1) differs from $GOLDEN"
}

# A copy of the package's sources without build leftovers (caches, egg-info), built outside the tree.
mkdir "$tmp/src"
tar --exclude=__pycache__ --exclude='*.egg-info' --exclude=build -cf - analyzer | tar -C "$tmp/src" -xf -
"$PYTHON" -m venv "$venv"
start=$(date +%s)
# --no-compile: the dependencies' bytecode, which their first import writes all the same (half the install)
"$venv/bin/python" -m pip install -q --no-compile "$tmp/src/analyzer" || fail "pip install ./analyzer"
where=$(cd "$tmp" && "$venv/bin/python" -c 'import pintime; print(pintime.__file__)')
case $where in "$venv"/*) ;; *) fail "the venv imports pintime from $where" ;; esac
say "pip install ./analyzer into a fresh venv: $(($(date +%s) - start)) s"
# which libsndfile soundfile loaded: the one inside its wheel, not the system's
(cd "$tmp" && "$venv/bin/python" -c 'import soundfile as s
where = "the system: " + s._libname if hasattr(s, "_libname") else s._full_path
print("check-install: libsndfile", s.__libsndfile_version__, "from", where)')

# From the repository's root with the capture's relative path, as the golden file was made.
start=$(date +%s)
analyze_is_golden "first run"
say "pintime analyze $CAPTURE = $GOLDEN (first run, kernels compiled: $(($(date +%s) - start)) s)"

installed edges "$CAPTURE" --csv "$tmp/edges.csv"
[ "$status" -eq 0 ] || fail "pintime edges $CAPTURE: $(cat "$tmp/err")"
if [ -x "$DEV_PINTIME" ]; then
  "$DEV_PINTIME" edges "$CAPTURE" --csv "$tmp/dev-edges.csv" 2> /dev/null || fail "$DEV_PINTIME edges"
  cmp -s "$tmp/edges.csv" "$tmp/dev-edges.csv" || fail "pintime edges: installed and $DEV_PINTIME differ"
  say "pintime edges $CAPTURE: $(($(wc -l < "$tmp/edges.csv") - 1)) edges, as the development tree's"
fi

# The recorder loads sounddevice and PortAudio from what pip installed (on Linux: the system's PortAudio).
installed record --list-devices
if [ "$status" -eq 0 ]; then
  say "pintime record --list-devices: $(wc -l < "$tmp/out") input device(s)"
elif [ "$status" -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q '^pintime: error: ' "$tmp/err"; then
  say "pintime record --list-devices: $(cat "$tmp/err")"
else
  fail "pintime record --list-devices: exit $status: $(cat "$tmp/err")"
fi

# Without the packages only recording and plots need, nothing on the way to a table misses them.
"$venv/bin/python" -m pip uninstall -q -y sounddevice matplotlib || fail "pip uninstall"
analyze_is_golden "without sounddevice and matplotlib"
installed record --list-devices
[ "$status" -eq 2 ] && [ "$(cat "$tmp/err")" = "$NO_SOUNDDEVICE" ] \
  || fail "pintime record without sounddevice: exit $status: $(cat "$tmp/err")"
say "without sounddevice and matplotlib: analyze the same; record: $(cat "$tmp/err")"
say "passed"
