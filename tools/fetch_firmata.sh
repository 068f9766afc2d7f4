#!/bin/sh
# Fetch a stock StandardFirmata build for the Arduino Uno from the npm package
# avrgirl-arduino (package/junk/hex/uno/StandardFirmata.cpp.hex) into a
# git-ignored cache. Prints the path of the .hex on stdout.
#
#   tools/fetch_firmata.sh [CACHE_DIR]      (default: .cache/firmata)
#   AVRGIRL_VERSION=5.0.1 tools/fetch_firmata.sh   pins the package version
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${1:-${ARMCTL_FIRMATA_CACHE:-$root/.cache/firmata}}
hex=$cache/StandardFirmata.cpp.hex
if [ -s "$hex" ]; then
    echo "$hex"
    exit 0
fi
command -v npm >/dev/null || { echo "fetch_firmata: npm not found (apt-get install npm)" >&2; exit 1; }
mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "avrgirl-arduino${AVRGIRL_VERSION:+@$AVRGIRL_VERSION}" >/dev/null)
tar -xzf "$tmp"/avrgirl-arduino-*.tgz -C "$tmp" package/junk/hex/uno/StandardFirmata.cpp.hex
mv "$tmp/package/junk/hex/uno/StandardFirmata.cpp.hex" "$hex.part"
mv "$hex.part" "$hex"
echo "$hex"
