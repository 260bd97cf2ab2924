#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel work trees under build/, and the overlay that lives in this repo.
#
#   tree.sh extract   build/patched/linux: the pinned base as a git repo
#   tree.sh sync      bring the overlay into build/patched/linux
#   tree.sh refresh   bring build/patched/linux back into the overlay
#   tree.sh stock     build/stock/linux: a worktree of the base, unpatched
#   tree.sh check     every .patch applies with patch -p1 to the tarball
#
# The overlay is every file of this repo outside the rig's own files:
# a file named X.patch is a diff against the base's X, any other file is
# a new file at its kernel path.  In build/patched/linux, tag "base" is
# the tarball and HEAD is the last overlay that was synced or refreshed,
# so "git status" there shows exactly the edits not yet refreshed.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
tarball=${TARBALL:-/usr/src/linux-source-6.12.tar.xz}
base_commit=32eb4f84201e37117e0d4d905ebaa60eb05be7c0
tree=$top/build/patched/linux
stock=$top/build/stock/linux
# The rig's own files: everything else in the repo is overlay.
rig_paths=(Makefile README.md .gitignore .ci rig bench build .git)

# Fixed identity and dates so the base commit is the same everywhere.
export GIT_AUTHOR_NAME=aio-rig GIT_AUTHOR_EMAIL=aio-rig@localhost
export GIT_COMMITTER_NAME=aio-rig GIT_COMMITTER_EMAIL=aio-rig@localhost
export GIT_AUTHOR_DATE='2025-01-01T00:00:00Z' GIT_COMMITTER_DATE='2025-01-01T00:00:00Z'

die() { echo "tree.sh: $*" >&2; exit 1; }
g() { git -C "$tree" "$@"; }

# Overlay files, relative to the repo top, sorted.
overlay_files() {
	local prune=() p
	for p in "${rig_paths[@]}"; do
		prune+=(-path "./$p" -prune -o)
	done
	(cd "$top" && find . "${prune[@]}" -type f -print) | sed 's|^\./||' | LC_ALL=C sort
}

# Kernel path an overlay file stands for.
kpath() { case $1 in *.patch) echo "${1%.patch}" ;; *) echo "$1" ;; esac; }

cmd_extract() {
	[ -d "$tree/.git" ] && return 0
	[ -f "$tarball" ] || die "$tarball missing (make deps installs linux-source-6.12)"
	echo "  EXTRACT $tarball -> build/patched/linux"
	local tmp=$top/build/patched/.extract
	rm -rf "$tmp"
	mkdir -p "$tmp"
	tar -xf "$tarball" -C "$tmp"
	mv "$tmp"/linux-source-* "$tree"
	rmdir "$tmp"
	g init -q -b work
	g config core.autocrlf false
	g config gc.auto 0
	# Debian's tarball ignores every top-level path ("/*", its packaging
	# repo's view); drop that so new files show in git status.
	sed -i '/^# Debian packaging/,$d' "$tree/.gitignore"
	g add -A -f .
	g commit -q -m "base: $(basename "$tarball")"
	g tag base
	echo "  BASE    $(g rev-parse --short base) ($(make -s -C "$tree" kernelversion))"
	# Same tarball, same dates, same commit: the patches' base is pinned.
	[ "$(g rev-parse base)" = "$base_commit" ] ||
		die "base $(g rev-parse base) is not the pinned $base_commit: $tarball is not linux-source-6.12 6.12.118-1~deb12u1"
}

# Build the overlay's view of every path it touches in $1: base content
# with the patch applied, or the new file.
expected_tree() {
	local out=$1 f k
	mkdir -p "$out"
	while read -r f; do
		k=$(kpath "$f")
		mkdir -p "$out/$(dirname "$k")"
		if [[ $f == *.patch ]]; then
			g cat-file -e "base:$k" 2>/dev/null ||
				die "$f: $k is not in the base tree"
			g show "base:$k" >"$out/$k"
			patch -s -p1 -d "$out" --no-backup-if-mismatch -r - <"$top/$f" >/dev/null ||
				die "$f does not apply to the base"
		else
			g cat-file -e "base:$k" 2>/dev/null &&
				die "$f exists in the base: name it $f.patch and make it a diff"
			cp "$top/$f" "$out/$k"
		fi
	done < <(overlay_files)
}

# Paths that differ between base and the given commit-ish / worktree.
changed_vs_base() { g diff --name-only --no-renames base "$@"; }

cmd_sync() {
	cmd_extract
	local tmp k want head work conflicts=() synced=()
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"; trap - RETURN' RETURN
	expected_tree "$tmp"
	# Paths the overlay touches now, or touched at the last sync.
	local paths
	paths=$( { (cd "$tmp" && find . -type f | sed 's|^\./||'); changed_vs_base HEAD; } | LC_ALL=C sort -u)
	for k in $paths; do
		want=$(git hash-object "$tmp/$k" 2>/dev/null || echo base)
		[ "$want" = base ] && want=$(g rev-parse -q --verify "base:$k" || echo none)
		head=$(g rev-parse -q --verify "HEAD:$k" || echo none)
		[ "$want" = "$head" ] && continue	# overlay unchanged here
		if [ -e "$tree/$k" ]; then work=$(g hash-object "$k"); else work=none; fi
		if [ "$work" != "$head" ] && [ "$work" != "$want" ]; then
			conflicts+=("$k")
			continue
		fi
		if [ -f "$tmp/$k" ]; then
			[ "$work" = "$want" ] || { mkdir -p "$tree/$(dirname "$k")"; cp "$tmp/$k" "$tree/$k"; }
		elif [ "$want" = none ]; then
			rm -f "$tree/$k"
		else
			g show "base:$k" >"$tree/$k"
		fi
		echo "  SYNC    $k"
		synced+=("$k")
		g add -A -- "$k"
	done
	if [ ${#conflicts[@]} -gt 0 ]; then
		printf '  CONFLICT %s\n' "${conflicts[@]}" >&2
		die "these files were edited in build/patched/linux and changed in the repo too; run 'make refresh' (keeps the tree) or 'git -C build/patched/linux checkout HEAD -- FILE' (keeps the repo), then retry"
	fi
	# The series' parts follow files edited in the repo (rig/series.sh).
	[ ${#synced[@]} = 0 ] || "$top/rig/series.sh" parts "${synced[@]}"
	g diff --cached --quiet || g commit -q -m overlay
}

cmd_refresh() {
	# Overlay changes not yet in the tree (a pull, a new file) go in
	# first, so that exporting the tree cannot drop them.
	cmd_sync
	# The series' parts follow the edits (rig/series.sh).
	"$top/rig/series.sh" parts
	local k f n=0
	# Everything that differs from base in the work tree, new files too.
	g add -A .
	for k in $(changed_vs_base --cached); do
		if g cat-file -e "base:$k" 2>/dev/null; then
			if [ -e "$tree/$k" ]; then
				mkdir -p "$top/$(dirname "$k")"
				g diff --cached --no-color --no-ext-diff base -- "$k" >"$top/$k.patch.new"
				mv "$top/$k.patch.new" "$top/$k.patch"
			else
				die "$k was deleted: the overlay cannot express deletions"
			fi
		else
			mkdir -p "$top/$(dirname "$k")"
			cmp -s "$tree/$k" "$top/$k" || cp "$tree/$k" "$top/$k"
		fi
		n=$((n + 1))
	done
	# Overlay files whose change was reverted in the tree go away.
	local keep
	keep=$(changed_vs_base --cached)
	while read -r f; do
		k=$(kpath "$f")
		grep -qxF "$k" <<<"$keep" || { echo "  DROP    $f"; rm -f "$top/$f"; }
	done < <(overlay_files)
	g diff --cached --quiet HEAD || g commit -q -m overlay
	echo "  REFRESH $n files in the overlay"
}

cmd_stock() {
	cmd_extract
	[ -e "$stock/.git" ] && return 0
	echo "  STOCK   worktree of base -> build/stock/linux"
	mkdir -p "$(dirname "$stock")"
	g worktree add -q --detach "$stock" base
}

# Acceptance check: every .patch applies to a pristine tarball extract.
cmd_check() {
	local tmp f rc=0
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"; trap - RETURN' RETURN
	tar -xf "$tarball" -C "$tmp"
	while read -r f; do
		[[ $f == *.patch ]] || continue
		if patch -s -p1 --dry-run -d "$tmp"/linux-source-* <"$top/$f" >/dev/null; then
			echo "  APPLIES $f"
		else
			echo "  FAILS   $f"
			rc=1
		fi
	done < <(overlay_files)
	return $rc
}

case ${1:-} in
extract | sync | refresh | stock | check) "cmd_$1" ;;
list) overlay_files ;;
*) die "usage: tree.sh extract|sync|refresh|stock|check|list" ;;
esac
