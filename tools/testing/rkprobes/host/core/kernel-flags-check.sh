#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Type-checks the kprobes pure-logic files (kernel/kprobes/*.rs that do not
# name the kernel crate) and then, with the kernel crate, the unwired glue in
# kernel/kprobes/glue/, using the kernel's own rustc, core and lint flags,
# against an existing configured CONFIG_RUST=y build directory. It runs
# rustc --emit=metadata into a temporary directory; it never builds or
# modifies the kernel tree or the build directory. The glue step needs a build
# whose bindings include <linux/kprobes.h> (patch 0002).
#
# usage: kernel-flags-check.sh <kernel build dir> [rustc]

set -eu

build=${1:?usage: $0 <kernel build dir> [rustc]}
rustc=${2:-/usr/bin/rustc}
objdump=llvm-objdump-22
src=$(cd "$(dirname "$0")/../../../../.." && pwd)/kernel/kprobes
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

{
	echo '//! Kernel-flags check of the kprobes pure logic.'
	echo '#![no_std]'
	for f in arch blacklist debugfs errno insn_slot kretprobe optimizer \
		 register report store table text; do
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
		$abi @./include/generated/rustc_cfg \
		--emit=metadata="$tmp/$name.rmeta" --crate-type rlib -L./rust \
		"$@" --sysroot=/dev/null -Zunstable-options
}

cd "$build"
# The target and the ABI-relevant flags the arch Makefile gave the kernel crate
# (mixing them is refused by rustc).
abi=$(grep -oE -- '(^| )(--target=|-Ctarget-|-Ccode-model=|-Cno-redzone=|-Crelocation-model=|-Zbranch-protection=|-Zfixed-x18|-Zdirect-access-external-data=|-Zcf-protection=|-Zfunction-return=|-Zpatchable-function-entry=)[^ ]*' \
	rust/.kernel.o.cmd | sort -u | tr '\n' ' ')
check logic --crate-name rkprobes_logic_check "$tmp/lib.rs"
echo "kernel-flags check (logic): OK ($src)"

if grep -q 'pub struct kprobe {' rust/bindings/bindings_generated.rs 2>/dev/null; then
	cp "$tmp/lib.rs" "$tmp/glue.rs"
	echo "#[path = \"$src/glue/mod.rs\"]" >> "$tmp/glue.rs"
	echo 'pub mod glue;' >> "$tmp/glue.rs"
	check glue --extern kernel --extern ffi --crate-name rkprobes_glue_check "$tmp/glue.rs"
	echo "kernel-flags check (glue): OK"

	# Object with the kernel's codegen flags: the probe-hit entry points must sit in
	# .kprobes.text (unprobeable) and contain no panic path.
	RUSTC_BOOTSTRAP=1 "$rustc" --edition=2021 -Astable_features -Aunused_features \
		-Cpanic=abort -Cembed-bitcode=n -Clto=n -Cforce-unwind-tables=n \
		-Ccodegen-units=1 -Csymbol-mangling-version=v0 \
		-Zfunction-sections=n $abi -Copt-level=2 -Cdebug-assertions=n -Coverflow-checks=y \
		@./include/generated/rustc_cfg --extern kernel --extern ffi \
		--emit=obj="$tmp/glue.o" --crate-type rlib -L./rust \
		--crate-name kprobes_rust "$tmp/glue.rs" --sysroot=/dev/null -Zunstable-options
	hot=$($objdump -t "$tmp/glue.o" | awk '$4 == ".kprobes.text" && $3 == "F" {print $NF}')
	if grep -q '^CONFIG_KRETPROBE_ON_RETHOOK=y' .config; then
		kret=kretprobe_rethook_handler
	else
		kret="__kretprobe_trampoline_handler kretprobe_find_ret_addr kprobe_flush_task"
	fi
	for f in get_kprobe opt_pre_handler kprobes_inc_nmissed_count aggr_pre_handler \
		 aggr_post_handler pre_handler_kretprobe $kret; do
		case "$hot" in
		*"$f"*) ;;
		*) echo "kernel-flags check: $f is not in .kprobes.text" >&2; exit 1 ;;
		esac
	done
	if $objdump -dr -j .kprobes.text "$tmp/glue.o" | grep -q 'panic\|slice_index_fail'; then
		echo "kernel-flags check: a panic path in .kprobes.text" >&2
		exit 1
	fi
	echo "kernel-flags check (hit path in .kprobes.text, no panics): OK"
else
	echo "kernel-flags check (glue): skipped, bindings lack struct kprobe"
fi
