#!/bin/sh
# Install everything pintime needs on a bare Debian machine; fast and silent when all is there already.
set -eu
APT_PACKAGES="gcc-avr avr-libc binutils-avr simavr libsimavr-dev libelf-dev pkg-config avrdude
  python3-venv libsndfile1 libportaudio2 arduino-core-avr"
missing=""
for p in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "deps: installing Debian packages:$missing"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
VENV=.venv
PYTHON=${PYTHON:-python3}
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
# Reinstall the analyzer only when its package description changed since the last install.
stamp="$VENV/.pintime-installed"
if [ ! -f "$stamp" ] || [ analyzer/pyproject.toml -nt "$stamp" ]; then
  echo "deps: installing the analyzer and its Python dependencies into $VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -e "./analyzer[dev]"
  touch "$stamp"
fi
# Byte-compile the analyzer as a regular install does (an editable one leaves it to the first run, which
# cannot write it where PYTHONDONTWRITEBYTECODE is set: then every start compiles 60 modules, 80 ms).
"$VENV/bin/python" -m compileall -q analyzer/pintime
# Compile the kernels once per state of the sources (tools/compile_kernels.py): not in the first analysis.
"$VENV/bin/python" tools/compile_kernels.py captures/table1-default.wav captures/table1-laptop-48k.wav
