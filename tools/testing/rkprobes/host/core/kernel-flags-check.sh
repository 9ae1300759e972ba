#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Type-checks the kprobes pure-logic files (kernel/kprobes/*.rs that do not
# name the kernel crate) and then, with the kernel crate, the unwired glue in
# kernel/kprobes/kernel/, using the kernel's own rustc, core and lint flags,
# against an existing configured CONFIG_RUST=y build directory. It runs
# rustc --emit=metadata into a temporary directory; it never builds or
# modifies the kernel tree or the build directory. The glue step needs a build
# whose bindings include <linux/kprobes.h> (patch 0002).
#
# usage: kernel-flags-check.sh <kernel build dir> [rustc]

set -eu

build=${1:?usage: $0 <kernel build dir> [rustc]}
rustc=${2:-/usr/bin/rustc}
src=$(cd "$(dirname "$0")/../../../../.." && pwd)/kernel/kprobes
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

{
	echo '//! Kernel-flags check of the kprobes pure logic.'
	echo '#![no_std]'
	for f in arch blacklist debugfs errno insn_slot kretprobe optimizer \
		 register store table text; do
		echo "#[path = \"$src/$f.rs\"]"
		echo "pub mod $f;"
	done
} > "$tmp/lib.rs"

check() {
	name=$1
	shift
	RUSTC_BOOTSTRAP=1 "$rustc" --edition=2021 \
		-Astable_features -Aunused_features -Dnon_ascii_idents \
		-Dunsafe_op_in_unsafe_fn -Wmissing_docs -Wrust_2018_idioms \
		-Wunreachable_pub -Dwarnings \
		-Cpanic=abort -Copt-level=2 -Coverflow-checks=y \
		--target=./scripts/target.json @./include/generated/rustc_cfg \
		--emit=metadata="$tmp/$name.rmeta" --crate-type rlib -L./rust \
		"$@" --sysroot=/dev/null -Zunstable-options
}

cd "$build"
check logic --crate-name rkprobes_logic_check "$tmp/lib.rs"
echo "kernel-flags check (logic): OK ($src)"

if grep -q 'pub struct kprobe {' rust/bindings/bindings_generated.rs 2>/dev/null; then
	cp "$tmp/lib.rs" "$tmp/glue.rs"
	echo "#[path = \"$src/kernel/mod.rs\"]" >> "$tmp/glue.rs"
	echo 'pub mod glue;' >> "$tmp/glue.rs"
	check glue --extern kernel --extern ffi --crate-name rkprobes_glue_check "$tmp/glue.rs"
	echo "kernel-flags check (glue): OK"
else
	echo "kernel-flags check (glue): skipped, bindings lack struct kprobe"
fi
