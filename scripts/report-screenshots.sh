#!/bin/sh
# Renders a report page (report.html of `oversub reproduce`) in Debian's
# headless Chromium at desktop (1280 px) and phone (412 px) width: writes
# OUTDIR/desktop.png and OUTDIR/phone.png (the first 900 px, what a reader
# sees first, and the whole page, *-full.png) to look at, and fails when
# the page is wider than the window at either width (content a phone
# cannot reach without scrolling the whole page sideways; wide tables
# scroll inside their own box and do not count).
# Usage: scripts/report-screenshots.sh REPORT.html [OUTDIR]   (default out/screenshots)
set -eu
page=${1:?usage: scripts/report-screenshots.sh REPORT.html [OUTDIR]}
out=${2:-out/screenshots}
[ -f "$page" ] || { echo "report-screenshots: $page: no such file" >&2; exit 2; }
if ! command -v chromium >/dev/null 2>&1; then
    apt-get install -y -o DPkg::Lock::Timeout=600 chromium >/dev/null
fi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A copy that records how far the page reaches past the window.
sed 's|</body>|<script>document.body.setAttribute("data-overflow", String(document.documentElement.scrollWidth - window.innerWidth))</script></body>|' \
    "$page" >"$tmp/page.html"
run() { chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "$@" 2>/dev/null; }
status=0
for spec in desktop:1280 phone:412; do
    name=${spec%%:*} w=${spec#*:}
    run --window-size="$w,900" --screenshot="$out/$name.png" "file://$tmp/page.html" >/dev/null
    run --window-size="$w,16000" --screenshot="$out/$name-full.png" "file://$tmp/page.html" >/dev/null
    over=$(run --window-size="$w,900" --dump-dom "file://$tmp/page.html" |
        sed -n 's/.*data-overflow="\(-\{0,1\}[0-9]*\)".*/\1/p' | head -n 1)
    if [ -z "$over" ]; then
        echo "report-screenshots: $name ($w px): could not measure the page's width" >&2
        status=1
    elif [ "$over" -gt 0 ]; then
        echo "report-screenshots: $name ($w px): the page is $over px wider than the window" >&2
        status=1
    else
        echo "$name ($w px): fits; $out/$name.png, $out/$name-full.png"
    fi
done
exit $status
