#!/bin/sh
# `pip install ./analyzer` alone, as a user on any OS installs pintime (no make, no apt, no dev extras), gives
# a working `pintime`: in a fresh venv in a temporary folder, the installed command analyses a committed
# capture exactly as tests/golden has it, finds the same edges as the development tree, and its recorder
# reaches PortAudio (a device list, or one error line where there is no sound card). `make check-install`.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CAPTURE=captures/table1-default.wav
GOLDEN=tests/golden/table1-default.txt
PYTHON=${PYTHON:-python3}
DEV_PINTIME=${DEV_PINTIME:-.venv/bin/pintime}  # the development tree's (editable) install, for the edges
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
fail() { echo "check-install: FAILED: $*" >&2; exit 1; }
# Nothing of the development environment may leak into the installed one.
unset PYTHONPATH NUMBA_CACHE_DIR VIRTUAL_ENV

# A copy of the package's sources without build leftovers (caches, egg-info), built outside the tree.
mkdir "$tmp/src"
tar --exclude=__pycache__ --exclude='*.egg-info' --exclude=build -cf - analyzer | tar -C "$tmp/src" -xf -
"$PYTHON" -m venv "$tmp/venv"
venv="$tmp/venv"
start=$(date +%s)
"$venv/bin/python" -m pip install -q "$tmp/src/analyzer" || fail "pip install ./analyzer"
installed=$(cd "$tmp" && "$venv/bin/python" -c 'import pintime; print(pintime.__file__)')
case $installed in "$venv"/*) ;; *) fail "the venv imports pintime from $installed" ;; esac
echo "check-install: pip install ./analyzer into a fresh venv: $(($(date +%s) - start)) s"
# which libsndfile soundfile loaded: the one inside its wheel, not the system's
(cd "$tmp" && "$venv/bin/python" -c 'import soundfile as s
where = "the system: " + s._libname if hasattr(s, "_libname") else s._full_path
print("check-install: libsndfile", s.__libsndfile_version__, "from", where)')

# From the repository's root with the capture's relative path, as the golden file was made.
start=$(date +%s)
"$venv/bin/pintime" analyze "$CAPTURE" > "$tmp/analyze.txt" 2> "$tmp/analyze.err" \
  || fail "pintime analyze $CAPTURE: $(cat "$tmp/analyze.err")"
[ ! -s "$tmp/analyze.err" ] || fail "pintime analyze $CAPTURE wrote to stderr: $(cat "$tmp/analyze.err")"
diff -u "$GOLDEN" "$tmp/analyze.txt" || fail "the installed pintime's analysis differs from $GOLDEN"
echo "check-install: pintime analyze $CAPTURE = $GOLDEN (first run, kernels compiled: $(($(date +%s) - start)) s)"

"$venv/bin/pintime" edges "$CAPTURE" --csv "$tmp/edges.csv" 2> "$tmp/edges.err" \
  || fail "pintime edges $CAPTURE: $(cat "$tmp/edges.err")"
if [ -x "$DEV_PINTIME" ]; then
  "$DEV_PINTIME" edges "$CAPTURE" --csv "$tmp/dev-edges.csv" 2> /dev/null || fail "$DEV_PINTIME edges"
  cmp -s "$tmp/edges.csv" "$tmp/dev-edges.csv" || fail "pintime edges: the installed and the development tree's differ"
  echo "check-install: pintime edges $CAPTURE: $(($(wc -l < "$tmp/edges.csv") - 1)) edges, as the development tree's"
fi

# The recorder loads sounddevice and PortAudio from what pip installed (or the system's PortAudio on Linux).
status=0
"$venv/bin/pintime" record --list-devices > "$tmp/record.out" 2> "$tmp/record.err" || status=$?
if [ "$status" -eq 0 ]; then
  echo "check-install: pintime record --list-devices: $(wc -l < "$tmp/record.out") input device(s)"
elif [ "$status" -eq 2 ] && [ "$(wc -l < "$tmp/record.err")" -eq 1 ] && grep -q '^pintime: error: ' "$tmp/record.err"; then
  echo "check-install: pintime record --list-devices: $(cat "$tmp/record.err")"
else
  fail "pintime record --list-devices: exit $status: $(cat "$tmp/record.err")"
fi
echo "check-install: passed ($ROOT/analyzer installed alone)"
