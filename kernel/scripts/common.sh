# shellcheck shell=bash
# Shared helpers for the oversub kernel scripts (sourced, not executed).
set -euo pipefail

KDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)     # <repo>/kernel
REPO=$(cd "$KDIR/.." && pwd)
CACHE=${OVERSUB_CACHE:-$HOME/.cache/oversub}
SRC=$CACHE/src                  # git repo: main worktree = unpatched (tag base)
TREE_UNPATCHED=$SRC/unpatched
TREE_PATCHED=$SRC/patched       # git worktree, branch oversub-patched = base + series
BUILD=$CACHE/build
# The O= directory of a kernel build is a direct subdirectory of its source tree
# (out_of TREE [SUFFIX]).  Kbuild then uses the relative srctree "..", so the
# compiler command lines of the patched, unpatched, bisect and mutant trees are
# the same and ccache serves, from any of them, every object the series does not
# change: a cold run compiles the kernel once, not twice.
OUT_SUBDIR=oversub-build
out_of() { echo "$1/$OUT_SUBDIR${2:+-$2}"; }
JOBS=${OVERSUB_JOBS:-2}
export CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
# Stable paths in debug info/macros so ccache hits across worktrees.
export CCACHE_BASEDIR=$CACHE
export CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
# The working directory differs between trees; nothing compiled here uses it.
export CCACHE_NOHASHDIR=1
export KBUILD_BUILD_TIMESTAMP='Thu Jan  1 00:00:00 UTC 2026'
export KBUILD_BUILD_USER=oversub KBUILD_BUILD_HOST=oversub
GIT_ID=(-c user.name="oversub developers" -c user.email="dev@oversub.invalid" -c commit.gpgsign=false)

# "HITS MISSES" of the ccache in use (direct + preprocessed hits; misses).
ccache_counts() {
	ccache --print-stats 2>/dev/null | awk -F'\t' '
		$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
		$1 == "cache_miss" { m += $2 }
		END { print h + 0, m + 0 }'
}

# User + system CPU seconds of the main shell's waited-for children (cutime + cstime).
children_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($14 + $15) / hz }' "/proc/$$/stat"
}

log() { echo "[kernel] $*" >&2; }
die() { echo "[kernel] ERROR: $*" >&2; exit 1; }

ensure_deps() {
	local miss=0 p
	for p in linux-source-6.12 build-essential bc flex bison libelf-dev libssl-dev dwarves cpio \
		kmod rsync ccache sparse python3 python3-ply qemu-system-x86; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || miss=1
	done
	if ((miss)); then
		log "installing build dependencies"
		"$REPO/scripts/install-deps.sh" kernel >&2
	fi
}

base_id() {
	local tb=/usr/src/linux-source-6.12.tar.xz
	[[ -f $tb ]] || die "$tb missing (apt-get install -y linux-source-6.12)"
	echo "$(dpkg-query -W -f='${Version}' linux-source-6.12) $(stat -c '%s %Y' $tb)"
}

# The patches that make the "patched" tree, in the order git am applies them: the posted
# series (kernel/patches/, without its cover letter), then the comparison series
# (kernel/comparison/*.patch, sorted by name; adding a comparison patch is dropping a file
# there).
series_patches() {
	local p
	for p in "$KDIR"/patches/[0-9]*.patch; do
		[[ $(basename "$p") == 0000-* ]] || echo "$p"
	done
	for p in "$KDIR"/comparison/*.patch; do
		[[ -f $p ]] && echo "$p"
	done
	true
}

# The cover letter does not change the tree, so it is not part of the id.
series_id() {
	series_patches | xargs cat | sha256sum | cut -d' ' -f1
}

# clean_in_tree_build TREE: a make without O= in TREE (an in-tree build, or an in-tree
# headers_install) leaves .config, include/config or arch/x86/include/generated behind, and
# every later O= build of TREE then stops in the top Makefile's outputmakefile check ("The
# source tree is not clean").  A cached tree that has them gets its untracked files removed,
# except the O= directories ($OUT_SUBDIR*) and git am's *.orig; tracked files are untouched.
clean_in_tree_build() {
	local tree=$1
	[[ -e $tree/.config || -d $tree/include/config || -d $tree/arch/x86/include/generated ]] || return 0
	log "removing an in-tree build from $tree (O= builds of a tree with one stop: 'source tree is not clean')"
	git -C "$tree" clean -q -fdx -e '*.orig' -e "/$OUT_SUBDIR*"
}

# Extract the pristine tree once (git repo, commit tagged "base").
prepare_base() {
	local id; id=$(base_id)
	if [[ -f $SRC/base-id && "$(cat "$SRC/base-id")" == "$id" ]] &&
		git -C "$TREE_UNPATCHED" rev-parse -q --verify base >/dev/null; then
		clean_in_tree_build "$TREE_UNPATCHED"
		return 0
	fi
	log "extracting /usr/src/linux-source-6.12.tar.xz into $TREE_UNPATCHED"
	rm -rf "$SRC" "$BUILD"
	mkdir -p "$TREE_UNPATCHED"
	tar -xJf /usr/src/linux-source-6.12.tar.xz -C "$TREE_UNPATCHED" --strip-components=1
	(
		cd "$TREE_UNPATCHED"
		git init -q
		git config gc.auto 0
		git add -A -f .
		git "${GIT_ID[@]}" commit -q -m "Linux $(make -s kernelversion) (Debian linux-source-6.12 $(dpkg-query -W -f='${Version}' linux-source-6.12))"
		git tag base
		git checkout -q --detach base
	)
	echo "$id" >"$SRC/base-id"
}

# Apply the series with git am into the patched worktree (only when it changed).
prepare_patched() {
	prepare_base
	local id; id=$(series_id)
	if [[ -f $SRC/series-id && "$(cat "$SRC/series-id")" == "$id" && -d $TREE_PATCHED ]]; then
		clean_in_tree_build "$TREE_PATCHED"
		return 0
	fi
	log "applying kernel/patches onto base in $TREE_PATCHED"
	rm -f "$SRC/series-id"
	if [[ ! -d $TREE_PATCHED ]]; then
		git -C "$TREE_UNPATCHED" worktree prune
		git -C "$TREE_UNPATCHED" worktree add -q -B oversub-patched "$TREE_PATCHED" base
	fi
	(
		cd "$TREE_PATCHED"
		git am --abort >/dev/null 2>&1 || true
		git reset -q --hard base
		git clean -q -fdx -e '*.orig' -e "/$OUT_SUBDIR*"
		local p
		for p in $(series_patches); do
			if ! git "${GIT_ID[@]}" am -q "$p" >/dev/null 2>&1; then
				git am --abort >/dev/null 2>&1 || true
				die "patch does not apply: ${p#"$KDIR"/}"
			fi
		done
	)
	echo "$id" >"$SRC/series-id"
}

# Serialise tree preparation between concurrent users of the same cache.
locked_prepare() {
	mkdir -p "$CACHE"
	(
		flock 9
		"$@"
	) 9>"$CACHE/.lock-src"
}

tree_of() {
	case $1 in
	patched) locked_prepare prepare_patched; echo "$TREE_PATCHED" ;;
	unpatched) locked_prepare prepare_base; echo "$TREE_UNPATCHED" ;;
	*) die "variant must be patched or unpatched" ;;
	esac
}

# make wrapper: ccache, -j, quiet-ish, out-of-tree.
kmake() {
	local tree=$1 out=$2; shift 2
	nice -n "${OVERSUB_NICE:-0}" make -s -C "$tree" O="$out" CC="ccache gcc" HOSTCC="ccache gcc" \
		-j"$JOBS" "$@"
}

# Options that must survive the merge; a fragment that loses them is an error.
REQUIRED_OPTS="KVM KVM_AMD KVM_INTEL FAIR_GROUP_SCHED CGROUP_SCHED SCHED_DEBUG SCHEDSTATS FTRACE DEBUG_FS"

# configure_tree TREE OUT [ARCH]: tinyconfig + every kernel/config/*.config (sorted).
configure_tree() {
	local tree=$1 out=$2 arch=${3:-x86_64} id f o
	id="$arch $(cat "$KDIR"/config/*.config | sha256sum | cut -d' ' -f1)"
	mkdir -p "$out"
	if [[ -f $out/.config && -f $out/.oversub-config-id && "$(cat "$out/.oversub-config-id")" == "$id" ]]; then
		return 0
	fi
	log "configuring $out ($arch): tinyconfig + $(cd "$KDIR/config" && echo *.config)"
	rm -f "$out/.oversub-config-id"
	kmake "$tree" "$out" ARCH="$arch" tinyconfig >/dev/null
	(cd "$tree" && ARCH=$arch scripts/kconfig/merge_config.sh -m -O "$out" "$out/.config" \
		$(printf '%s\n' "$KDIR"/config/*.config | sort)) >/dev/null
	kmake "$tree" "$out" ARCH="$arch" olddefconfig >/dev/null
	if [[ $arch == x86_64 ]]; then
		for o in $REQUIRED_OPTS; do
			grep -q "^CONFIG_$o=y" "$out/.config" || die "CONFIG_$o=y did not survive the config merge"
		done
		for f in "$KDIR"/config/*.config; do
			grep -E '^CONFIG_[A-Za-z0-9_]+=[^n]' "$f" | while IFS= read -r o; do
				grep -qxF "$o" "$out/.config" || log "note: $(basename "$f"): '$o' not in final .config"
			done || true
			grep -E '^CONFIG_[A-Za-z0-9_]+=n' "$f" | while IFS= read -r o; do
				o=${o%=n}
				! grep -q "^$o=y" "$out/.config" || log "note: $(basename "$f"): $o=n overridden"
			done || true
		done
	fi
	echo "$id" >"$out/.oversub-config-id"
}

# reconfigure_tree TREE OUT: merge every kernel/config/*.config again onto OUT's .config and
# run olddefconfig, for a tree checked out at another commit since configure_tree: symbols the
# commit adds get the fragments' values instead of their defaults (kbuild only updates what
# depends on a changed symbol).
reconfigure_tree() {
	local tree=$1 out=$2
	(cd "$tree" && scripts/kconfig/merge_config.sh -m -O "$out" "$out/.config" \
		$(printf '%s\n' "$KDIR"/config/*.config | sort)) >/dev/null
	kmake "$tree" "$out" olddefconfig >/dev/null
}
