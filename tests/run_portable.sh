#!/usr/bin/env bash
# The portable part of the suite: the CLI and Python API on the simulated arm and bus, no hardware-in-the-loop,
# pseudo-terminal or browser tests (those are POSIX tools). Run as is on Windows and macOS (the GitHub Actions
# workflow does), and on Linux with --without-posix: what Windows lacks taken away (no fcntl, termios, tty, pty
# or resource for armctl, no SIGHUP, select on sockets only, no os.pread/pwrite/posix_fallocate/fchmod:
# tests/nonposix/sitecustomize.py, loaded by every Python process the tests start). .ci/run does the latter.
#   tests/run_portable.sh [--without-posix] [pytest options]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--without-posix" ]; then
    shift
    export ARMCTL_TEST_NO_POSIX=1
    sep=":"
    case "$(uname -s)" in MINGW*|MSYS*|CYGWIN*) sep=";" ;; esac
    export PYTHONPATH="$PWD/tests/nonposix${PYTHONPATH:+$sep$PYTHONPATH}"
fi
files=()  # (no mapfile: macOS's /bin/bash is 3.2)
while IFS= read -r line; do
    line=${line%$'\r'}
    case "$line" in "" | "#"*) ;; *) files+=("$line") ;; esac
done < tests/portable.txt
exec python -m pytest -q -p no:cacheprovider "$@" "${files[@]}" \
    --deselect tests/calibration/test_lerobot_calibration.py::test_write_offsets_refuses_over_offsets_lerobot_stored_unless_forced
