#!/usr/bin/env bash
# Developer tool: regenerate kernel/patches/ (the posted series) and kernel/comparison/ (the
# comparison series on top of it) from a kernel git tree whose commits base..HEAD are both
# ("base" = pristine linux-source-6.12).  base..POSTED are the posted series, POSTED..HEAD
# the comparison series; POSTED defaults to the tree's tag "posted".  The cover letter text
# comes from kernel/cover-letter.txt (first line = subject).
#   Usage: format-series.sh /path/to/linux-tree [POSTED]
source "$(dirname "$0")/common.sh"
tree=${1:?usage: format-series.sh TREE [POSTED]}
posted=${2:-posted}
git -C "$tree" rev-parse -q --verify "$posted^{commit}" >/dev/null ||
	die "$tree has no commit '$posted' (tag the last commit of the posted series)"
tmp=$(mktemp -d)
git -C "$tree" "${GIT_ID[@]}" format-patch -q --cover-letter --no-signature --zero-commit \
	--subject-prefix="RFC PATCH" -o "$tmp/posted" "base..$posted"
git -C "$tree" "${GIT_ID[@]}" format-patch -q --no-signature --zero-commit \
	--subject-prefix="RFC PATCH comparison" -o "$tmp/comparison" "$posted..HEAD"
python3 - "$tmp"/posted/0000-cover-letter.patch "$KDIR/cover-letter.txt" <<'PY'
import sys
p, c = sys.argv[1], sys.argv[2]
s = open(p).read()
cover = open(c).read().rstrip("\n").split("\n")
s = s.replace("*** SUBJECT HERE ***", cover[0].strip())
s = s.replace("*** BLURB HERE ***", "\n".join(cover[1:]).strip("\n"))
open(p, "w").write(s)
PY
rm -f "$KDIR"/patches/*.patch "$KDIR"/comparison/*.patch
mkdir -p "$KDIR/patches" "$KDIR/comparison"
cp "$tmp"/posted/*.patch "$KDIR/patches/"
cp "$tmp"/comparison/*.patch "$KDIR/comparison/" 2>/dev/null || true
rm -rf "$tmp"
ls "$KDIR/patches" "$KDIR/comparison"
