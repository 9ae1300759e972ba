#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs insn-difftest over compiler output that kernel text lacks: the tree's host C
# programs (scripts/dtc, scripts/kconfig, scripts/mod) built by clang-22 for i686,
# i686 with AVX-512, x86-64 Sapphire Rapids (EVEX) and x86-64 with APX (REX2, EVEX map 4).
# Prints one "N instructions, M mismatches" line per target and a total; exits 1 on any
# mismatch.
set -eu

src=${RKPROBES_LINUX_SRC:-/root/.cache/rkprobes/linux-source-6.12}
top=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
[ -d "$src/scripts/dtc" ] || { echo "no Linux tree at $src; run scripts/rkprobes setup" >&2; exit 2; }

cargo build --quiet --release --manifest-path "$top/Cargo.toml" -p rkprobes-x86-insn --bin insn-difftest
difftest=$top/target/release/insn-difftest

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 32-bit builds against the 64-bit glibc headers need an empty gnu/stubs-32.h (no i386
# multilib is installed); it is a real glibc header name, not unfinished work.
mkdir -p "$work/inc/gnu"
: > "$work/inc/gnu/stubs-32.h"

total=0
failed=0
for target in "-m32 -march=i686" "-m32 -march=skylake-avx512" \
	      "-m64 -march=sapphirerapids" "-m64 -march=x86-64-v4 -mapxf"; do
	insns=0
	mismatches=0
	objects=0
	for c in "$src"/scripts/dtc/*.c "$src"/scripts/kconfig/*.c "$src"/scripts/mod/*.c; do
		o=$work/$(basename "$c" .c).o
		# Files needing generated headers are skipped; most build standalone.
		# shellcheck disable=SC2086 # $target is several flags
		clang-22 $target -O2 -w -idirafter "$work/inc" -idirafter /usr/include/x86_64-linux-gnu \
			-I"$src/scripts/dtc/libfdt" -I"$src/scripts/dtc" -I"$src/scripts/kconfig" \
			-I"$src/scripts/include" -c "$c" -o "$o" 2>/dev/null || continue
		objects=$((objects + 1))
		line=$("$difftest" "$o" 2>/dev/null | tail -n 1) || true
		insns=$((insns + $(echo "$line" | awk '{print $1}')))
		mismatches=$((mismatches + $(echo "$line" | awk '{print $3}')))
	done
	echo "$target: $objects objects, $insns instructions, $mismatches mismatches"
	total=$((total + insns))
	failed=$((failed + mismatches))
done
echo "$total instructions, $failed mismatches"
[ "$failed" -eq 0 ]
