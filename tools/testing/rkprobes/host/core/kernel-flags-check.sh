#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Checks the kprobes core against a built CONFIG_RUST=y kernel build directory
# of any arch, C or Rust core:
#
# 1. Type-checks the pure-logic files (kernel/kprobes/*.rs but the crate root)
#    and then, with the kernel crate, the glue in kernel/kprobes/glue/, using
#    the kernel's own rustc, core, bindings and lint flags (rustc
#    --emit=metadata into a temporary directory; it never modifies the tree or
#    the build directory).
# 2. Runs hitpath-check.py on the core objects the build linked (the Rust
#    core's kprobes_rust.o and kprobes_helpers.o, or C's kernel/kprobes.o):
#    every function reachable from a probe hit is unprobeable, whatever the
#    compiler inlined.
#
# `scripts/rkprobes test` runs it on every build it boots.
#
# usage: kernel-flags-check.sh <kernel build dir> [rustc]

set -eu

build=$(cd "${1:?usage: $0 <kernel build dir> [rustc]}" && pwd)
rustc=${2:-/usr/bin/rustc}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$(dirname "$0")/../../../../.." && pwd)/kernel/kprobes
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

{
	echo '//! Kernel-flags check of the kprobes pure logic.'
	echo '#![no_std]'
	for f in "$src"/*.rs; do
		[ "$f" = "$src/kprobes_rust.rs" ] && continue
		echo "#[path = \"$f\"]"
		echo "pub mod $(basename "$f" .rs);"
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
	echo '#[macro_use]' >> "$tmp/glue.rs"
	echo 'pub mod glue;' >> "$tmp/glue.rs"
	# With a Rust arch layer the glue names it: mount it as the crate root does.
	mods=
	if grep -q 'CONFIG_KPROBES_RUST_ARCH' include/generated/rustc_cfg; then
		if grep -qx -- '--cfg=CONFIG_ARM64' include/generated/rustc_cfg; then
			arch=$(cd "$src/../../arch/arm64" && pwd)
			mods="kernel/probes/mod.rs:arm64 kernel/probes/native.rs:arm64_native"
		elif grep -qx -- '--cfg=CONFIG_RISCV' include/generated/rustc_cfg; then
			arch=$(cd "$src/../../arch/riscv" && pwd)
			mods="kernel/probes/mod.rs:riscv kernel/probes/native.rs:riscv_native"
		elif grep -qx -- '--cfg=CONFIG_LOONGARCH' include/generated/rustc_cfg; then
			arch=$(cd "$src/../../arch/loongarch" && pwd)
			mods="kernel/probes/mod.rs:loongarch kernel/probes/native.rs:loongarch_native"
		elif grep -qx -- '--cfg=CONFIG_S390' include/generated/rustc_cfg; then
			arch=$(cd "$src/../../arch/s390" && pwd)
			mods="kernel/probes/mod.rs:s390 kernel/probes/native.rs:s390_native"
		elif grep -qx -- '--cfg=CONFIG_PPC64' include/generated/rustc_cfg; then
			arch=$(cd "$src/../../arch/powerpc" && pwd)
			mods="kernel/probes/mod.rs:powerpc kernel/probes/native.rs:powerpc_native"
		else
			arch=$(cd "$src/../../arch/x86" && pwd)
			mods="lib/insn_decoder/mod.rs:insn_decoder kernel/kprobes/mod.rs:x86"
			mods="$mods kernel/kprobes/native.rs:x86_native"
		fi
	fi
	for m in $mods; do
		echo "#[path = \"$arch/${m%%:*}\"]" >> "$tmp/glue.rs"
		echo "pub mod ${m##*:};" >> "$tmp/glue.rs"
	done
	check glue --extern kernel --extern ffi --crate-name rkprobes_glue_check "$tmp/glue.rs"
	echo "kernel-flags check (glue): OK"
else
	echo "kernel-flags check (glue): skipped, bindings lack struct kprobe"
fi

# The hit path of the objects this build linked.
cd "$here"
python3 "$here/hitpath-check.py" "$build"
