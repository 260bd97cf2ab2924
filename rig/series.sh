#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# series.sh export|checkpatch|build: the overlay as an ordered patch series.
#
# rig/series/NNNN-name files are the logical patches, in order: a commit
# message (subject line, blank line, body) and "Files:" lines naming the
# overlay files (new files and X.patch files, or a directory/ for all the
# overlay files under it) that make up that patch.  rig/series/cover-letter
# is the cover letter: subject line, blank line, text.
#
# Every overlay file belongs to exactly one patch, with one exception for
# files that several patches add lines to (MAINTAINERS): "X.patch:REGEX"
# in an earlier patch takes only the added lines of X.patch that match
# REGEX; the patch that names plain X.patch (the last one) completes it.
# A name under a listed directory/ that another patch lists by itself
# belongs to that other patch.
#
# A file that a later patch changes again (a feature built on an earlier
# patch's changes to the same file) is listed in the earlier patch, and
# the later one has its part in rig/series/NNNN-name.d/K.diff (K the
# file's kernel path): the diff from the file as of the patches before
# it to the file as of this one.  The file as of a patch is the overlay's
# with the parts of all later patches reverse-applied, latest first.
# "make refresh" remakes the parts from the edits it brings back (see
# cmd_parts), so they are never edited by hand either.
#
#   export      commit each patch on base in build/series/linux and write
#               git format-patch output to build/series/patches/
#   checkpatch  export, then scripts/checkpatch.pl --strict on every patch
#   build       export, then build the kernel at every step
#   parts [K...] remake the parts for the edits in build/patched/linux
#               since its HEAD, of files K or all (run by tree.sh sync
#               for the files it brings in, and by tree.sh refresh)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
tree=$top/build/patched/linux
wt=$top/build/series/linux
outdir=$top/build/series/patches
sdir=$top/rig/series
author='AIO offload developers <aio-offload@example.org>'

export GIT_AUTHOR_NAME=${author% <*} GIT_AUTHOR_EMAIL=aio-offload@example.org
export GIT_COMMITTER_NAME=$GIT_AUTHOR_NAME GIT_COMMITTER_EMAIL=$GIT_AUTHOR_EMAIL
export GIT_AUTHOR_DATE='2025-01-01T00:00:00Z' GIT_COMMITTER_DATE='2025-01-01T00:00:00Z'

die() { echo "series.sh: $*" >&2; exit 1; }
entries() { find "$sdir" -maxdepth 1 -type f -name '[0-9][0-9][0-9][0-9]-*' | LC_ALL=C sort; }
# Names every patch lists one by one (not through a directory/).
named_files() { sed -n 's/^Files://p' $(entries) | tr ' ' '\n' | grep -v '/$' | grep . || true; }
# A name ending in / stands for every overlay file under that directory
# that no patch names by itself.  With "plain", leave out the
# X.patch:REGEX partial listings.
files_of() {
	local f named
	named=$(named_files)
	for f in $(sed -n 's/^Files://p' "$1"); do
		[ "${2:-}" = plain ] && [[ $f == *.patch:* ]] && continue
		case $f in
		*/) "$top/rig/tree.sh" list | grep "^$f" | grep -vxF -f <(echo "$named") ||
			die "$(basename "$1"): nothing under $f" ;;
		*) echo "$f" ;;
		esac
	done
}

# Parts (rig/series/NNNN-name.d/K.diff), in patch order.
all_parts() {
	find "$sdir" -mindepth 2 -path "$sdir/[0-9][0-9][0-9][0-9]-*.d/*" -name '*.diff' |
		LC_ALL=C sort
}
part_entry() { local p=${1#"$sdir"/}; echo "$sdir/${p%%.d/*}"; }
part_path() { local p=${1#"$sdir"/*.d/}; echo "${p%.diff}"; }
# parts_after ENTRY K: K's parts of the patches after ENTRY, latest first.
parts_after() {
	local p
	for p in $(all_parts | LC_ALL=C sort -r); do
		[ "$(part_path "$p")" = "$2" ] || continue
		[[ "$(part_entry "$p")" > "$1" ]] && echo "$p"
	done
	return 0
}
# unapply FILE K PART: reverse-apply PART (a diff of K) to FILE in place.
unapply() {
	local d
	d=$(mktemp -d)
	mkdir -p "$d/$(dirname "$2")"
	cp "$1" "$d/$2"
	(cd "$d" && git apply -R "$3") || { rm -rf "$d"; return 1; }
	cp "$d/$2" "$1"
	rm -rf "$d"
}
# file_at ENTRY K OUT: K as of patch ENTRY (the overlay's, less later parts).
file_at() {
	local p
	git -C "$tree" show "HEAD:$2" >"$3"
	for p in $(parts_after "$1" "$2"); do
		unapply "$3" "$2" "$p" || die "$(basename "$1"): ${p#"$top"/} does not reverse-apply to $2"
	done
}

# The diff with only the added lines matching $2 (for diffs that only add).
partial() {
	awk -v re="$2" '/^\+\+\+ / || !/^\+/ || $0 ~ re' "$1"
}

cmd_export() {
	"$top/rig/tree.sh" sync >/dev/null
	# Every overlay file in exactly one patch, and no unknown names.
	local listed dup missing e f k p re n=0
	local -A taken=()
	listed=$(for e in $(entries); do files_of "$e" plain; done | LC_ALL=C sort)
	dup=$(uniq -d <<<"$listed")
	[ -z "$dup" ] || die "in more than one patch: $dup"
	missing=$(comm -3 <(echo "$listed") <("$top/rig/tree.sh" list))
	[ -z "$missing" ] || die "overlay files and rig/series disagree:
$missing
(left column: listed but no such overlay file; right: not in any patch)"

	if [ -e "$wt/.git" ]; then
		# A failed export may have left changes behind.
		git -C "$wt" reset -q --hard
		git -C "$wt" clean -fdq
		git -C "$wt" checkout -q --detach base
	else
		mkdir -p "$(dirname "$wt")"
		git -C "$tree" worktree add -q --detach "$wt" base
	fi
	for e in $(entries); do
		for f in $(files_of "$e"); do
			# Each step writes whole files: the overlay's version
			# (as synced into build/patched/linux), or for X.patch:RE
			# the base with only the matching added lines.
			case $f in
			*.patch:*)
				# Lines taken by earlier partial listings stay.
				k=${f%%.patch:*}
				re=${f#*.patch:}
				[ -n "${taken[$k]:-}" ] && re="${taken[$k]}|$re"
				taken[$k]=$re
				git -C "$wt" checkout -q base -- "$k"
				partial "$top/${f%%:*}" "$re" |
					(cd "$wt" && git apply --recount) ||
					die "$(basename "$e"): $f does not apply" ;;
			*)
				k=${f%.patch}
				mkdir -p "$wt/$(dirname "$k")"
				file_at "$e" "$k" "$wt/$k" ;;
			esac
			git -C "$wt" add -A -- "$k"
		done
		for p in $(all_parts); do
			[ "$(part_entry "$p")" = "$e" ] || continue
			k=$(part_path "$p")
			[ -e "$wt/$k" ] || die "$(basename "$e"): a part of $k, which no earlier patch has"
			file_at "$e" "$k" "$wt/$k"
			git -C "$wt" add -A -- "$k"
		done
		{ sed '/^Files:/d' "$e" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
		  echo; echo "Signed-off-by: $author"; } |
			git -C "$wt" commit -q -F - || die "$(basename "$e"): nothing to commit"
		n=$((n + 1))
	done
	# The series must add up to exactly the overlay.
	[ "$(git -C "$wt" rev-parse 'HEAD^{tree}')" = "$(git -C "$tree" rev-parse 'HEAD^{tree}')" ] ||
		die "the series does not add up to the overlay (compare build/series/linux with build/patched/linux HEAD)"

	rm -rf "$outdir"
	git -C "$wt" format-patch -q --cover-letter -o "$outdir" base..HEAD
	local cover=$outdir/0000-cover-letter.patch subj
	subj=$(head -n1 "$sdir/cover-letter")
	python3 - "$cover" "$subj" "$sdir/cover-letter" <<'PY'
import sys
path, subj, blurb = sys.argv[1:]
text = open(blurb).read().split('\n', 1)[1].strip('\n')
s = open(path).read()
s = s.replace('*** SUBJECT HERE ***', subj).replace('*** BLURB HERE ***', text)
open(path, 'w').write(s)
PY
	echo "  SERIES  $n patches in build/series/patches/"
}

# Debian's python3 (with ply, for spdxcheck.py), not another one on PATH.
cmd_checkpatch() {
	cmd_export
	local p out rc=0 e=0 w=0 c=0
	for p in "$outdir"/[0-9]*.patch; do
		[ "$(basename "$p")" = 0000-cover-letter.patch ] && continue
		out=$(cd "$wt" && PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict --terse --no-summary "$p" 2>&1) || true
		[ -n "$out" ] && { echo "$(basename "$p"):"; echo "$out"; rc=1; }
		e=$((e + $(grep -c ': ERROR:' <<<"$out" || true)))
		w=$((w + $(grep -c ': WARNING:' <<<"$out" || true)))
		c=$((c + $(grep -c ': CHECK:' <<<"$out" || true)))
	done
	echo "  CHECKPATCH --strict: $e errors, $w warnings, $c checks"
	return $rc
}

cmd_build() {
	cmd_export
	local revs r i=0
	revs=$(git -C "$wt" rev-list --reverse base..HEAD)
	for r in $revs; do
		i=$((i + 1))
		git -C "$wt" checkout -q --detach "$r"
		echo "  STEP    $i: $(git -C "$wt" log -1 --format=%s "$r")"
		"$top/rig/kernel.sh" series || die "step $i does not build"
	done
	echo "  SERIES  all $i steps build"
}

# Remake the parts of each file edited in build/patched/linux since its
# HEAD (the overlay the parts were made for), latest part first.  The file
# before a part (old) is the HEAD version less the part; the new one takes
# the edit by a three-way merge (git merge-file, old as ours, HEAD as base,
# the edited file as theirs), where a conflict means the edit is in the
# part's own lines and the part keeps it (--ours).  An edit next to a
# part's lines may so end up in the part: "make series-check" shows each
# step's diff for review.
cmd_parts() {
	local k p d v vb w wb ok
	d=$(mktemp -d)
	trap 'rm -rf "$d"; trap - RETURN' RETURN
	for k in $(for p in $(all_parts); do part_path "$p"; done | LC_ALL=C sort -u); do
		# Only the paths given (tree.sh sync: the files it brings in).
		[ $# = 0 ] || printf '%s\n' "$@" | grep -qxF "$k" || continue
		git -C "$tree" cat-file -e "HEAD:$k" 2>/dev/null || continue
		[ -e "$tree/$k" ] || continue
		git -C "$tree" show "HEAD:$k" >"$d/v"
		cmp -s "$d/v" "$tree/$k" && continue
		# Parts that still reverse-apply (an edit elsewhere, or parts
		# that came with the edit, as in a pull) are left alone.
		cp "$tree/$k" "$d/w"
		ok=1
		for p in $(all_parts | LC_ALL=C sort -r); do
			[ "$(part_path "$p")" = "$k" ] || continue
			unapply "$d/w" "$k" "$p" 2>/dev/null || { ok=0; break; }
		done
		[ $ok = 1 ] && continue
		cp "$tree/$k" "$d/w"
		for p in $(all_parts | LC_ALL=C sort -r); do
			[ "$(part_path "$p")" = "$k" ] || continue
			cp "$d/v" "$d/vb"
			unapply "$d/vb" "$k" "$p" || die "${p#"$top"/} does not reverse-apply to $k as last synced"
			cp "$d/vb" "$d/wb"
			git merge-file -q --ours "$d/wb" "$d/v" "$d/w" || true
			diff -u --label "a/$k" --label "b/$k" "$d/wb" "$d/w" >"$p.new" || true
			if [ -s "$p.new" ]; then
				cmp -s "$p.new" "$p" || echo "  PART    ${p#"$top"/}"
				mv "$p.new" "$p"
			else
				rm -f "$p.new" "$p"
				echo "  DROP    ${p#"$top"/} (no change left)"
			fi
			mv "$d/vb" "$d/v"
			mv "$d/wb" "$d/w"
		done
	done
}

case ${1:-} in
export | checkpatch | build | parts) cmd=$1; shift; "cmd_$cmd" "$@" ;;
*) die "usage: series.sh export|checkpatch|build|parts" ;;
esac
