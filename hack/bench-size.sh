#!/usr/bin/env bash
# What the shipped binary weighs, per platform, and what each dependency adds
# to it (issue 19: keep a binary at or under 10 MB per platform).
#
# Per dependency: the sizes of its code and read-only data symbols in the
# linux/amd64 binary (go tool nm -size, types T/t/R/r; zeroed data takes no
# room in the file), summed by Go module. That is a lower bound of what
# dropping it would save (type metadata, pclntab and strings shared with
# other packages are not counted), but it ranks them truly.
# Prints; never fails on a size: benchmarks report. BENCH_SMOKE=1 (CI's
# bench smoke) builds linux/amd64 only: the other three are cross-builds of
# the same code, each compiling the standard library for its platform first.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/bench-lib.sh
. hack/bench-lib.sh
GO=${GO:-go}
LIMIT=$((10 * 1000 * 1000))
bench_init bench-size # $work only: no lab
# As the Makefile builds the shipped binaries (TAGS_REL: no HTTP/2 in net/http).
tags=$(sed -n 's/^TAGS_REL *:= *//p' Makefile)
flags=(-trimpath -tags "$tags" -ldflags '-s -w')

echo "binary size per platform (stripped, as shipped):"
printf '  %-14s %10s  %s\n' platform bytes "vs 10 MB"
platforms="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
[ "${BENCH_SMOKE:-0}" = 1 ] && platforms=linux/amd64
for p in $platforms; do
  out=$work/gopve_${p/\//_}
  CGO_ENABLED=0 GOOS=${p%/*} GOARCH=${p#*/} "$GO" build "${flags[@]}" -o "$out" ./modules-src/cmd/gopve
  size=$(stat -c %s "$out")
  printf '  %-14s %10d  %s\n' "$p" "$size" "$(awk -v s="$size" -v l="$LIMIT" 'BEGIN { printf "%.2f%s", s / l, (s > l ? "  OVER" : "") }')"
done

# Symbols need an unstripped build.
CGO_ENABLED=0 "$GO" build -trimpath -tags "$tags" -o "$work/gopve.sym" ./modules-src/cmd/gopve
"$GO" list -tags "$tags" -deps -f '{{with .Module}}{{.Path}}{{end}}' ./modules-src/cmd/gopve | sort -u | grep . >"$work/modules"
"$GO" tool nm -size "$work/gopve.sym" >"$work/nm"
echo
echo "what each module adds (code + read-only data symbol bytes, linux/amd64):"
awk -v mods="$work/modules" '
  BEGIN { while ((getline m < mods) > 0) { n++; mod[n] = m } }
  {
    size = $2; kind = $3; sym = $4
    if (size !~ /^[0-9]+$/ || sym == "" || kind !~ /^[TtRr]$/ || sym ~ /^(go|type):/) next
    # A symbol names its package path first: module/path.Func, module/path.(*T).M
    owner = "std + runtime"
    for (i = 1; i <= n; i++) {
      m = mod[i]
      if (index(sym, m) == 1 && (length(sym) == length(m) || substr(sym, length(m) + 1, 1) ~ /[.\/]/)) {
        if (length(m) > length(owner) || owner == "std + runtime") owner = m
      }
    }
    total[owner] += size; all += size
  }
  END {
    for (o in total) printf "%d\t%s\n", total[o], o
    printf "%d\t(all symbols)\n", all
  }' "$work/nm" | sort -rn | awk -F'\t' '{ printf "  %10d  %s\n", $1, $2 }'
echo
echo "who brings each module in (the first package outside it that imports it):"
"$GO" list -tags "$tags" -deps -f '{{.ImportPath}}|{{with .Module}}{{.Path}}{{end}}|{{join .Imports " "}}' ./modules-src/cmd/gopve >"$work/graph"
awk -F'|' '
  { mod[$1] = $2; imports[$1] = $3; order[++n] = $1 }
  END {
    for (i = 1; i <= n; i++) {
      p = order[i]; split(imports[p], im, " ")
      for (j in im) {
        q = im[j]; m = mod[q]
        if (m == "" || m == mod[p] || m == "github.com/gopve/proxmox" || (m in seen)) continue
        seen[m] = p
      }
    }
    for (m in seen) printf "  %s <- %s\n", m, seen[m]
  }' "$work/graph" | sort
