#!/usr/bin/env bash
# A screenshot of a `report` page as Debian's headless Chromium renders it (what docs/report.md shows).
# Usage: scripts/report_screenshot.sh PAGE.html OUT.png [WIDTHxHEIGHT]   (default 1280x1600)
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 PAGE.html OUT.png [WIDTHxHEIGHT]" >&2
  exit 2
fi
page=$(realpath "$1")
size=${3:-1280x1600}
command -v chromium >/dev/null || { echo "$0: chromium is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# --no-sandbox: Chromium refuses to run as root with its sandbox.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
  --window-size="${size/x/,}" --screenshot="$2" "file://$page" 2>/dev/null
test -s "$2"
