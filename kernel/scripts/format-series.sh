#!/usr/bin/env bash
# Developer tool: regenerate kernel/patches/ from a kernel git tree whose
# commits base..HEAD are the series ("base" = pristine linux-source-6.12).
# The cover letter text comes from kernel/cover-letter.txt (first line =
# subject).  Usage: format-series.sh /path/to/linux-tree
source "$(dirname "$0")/common.sh"
tree=${1:?usage: format-series.sh TREE}
out=$KDIR/patches
tmp=$(mktemp -d)
git -C "$tree" "${GIT_ID[@]}" format-patch -q --cover-letter --no-signature --zero-commit \
	--subject-prefix="PATCH 6.12" -o "$tmp" base..HEAD
python3 - "$tmp"/0000-cover-letter.patch "$KDIR/cover-letter.txt" <<'PY'
import sys
p, c = sys.argv[1], sys.argv[2]
s = open(p).read()
cover = open(c).read().rstrip("\n").split("\n")
s = s.replace("*** SUBJECT HERE ***", cover[0].strip())
s = s.replace("*** BLURB HERE ***", "\n".join(cover[1:]).strip("\n"))
open(p, "w").write(s)
PY
rm -f "$out"/*.patch
mkdir -p "$out"
cp "$tmp"/*.patch "$out"/
rm -rf "$tmp"
ls "$out"
