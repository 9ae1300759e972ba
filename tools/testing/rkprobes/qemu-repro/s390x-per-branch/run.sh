#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Build per-branch.S into a bare-metal s390x ELF and boot it with QEMU's
# s390-ccw-virtio machine under TCG. The test prints its PASS/FAIL lines on
# the SCLP console and ends in a disabled wait at 0xfff, which QEMU takes as
# a shutdown. Exit status: 0 every case passed, 1 a case failed, 2 no result.
#
# Environment: CC (clang-22), LD (ld.lld-22), QEMU (qemu-system-s390x),
# ACCEL (tcg; tcg,one-insn-per-tb=on for one instruction per TB), OUT (the
# build directory). Arguments are passed on to QEMU (-d nochain, -d int...).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-${TMPDIR:-/tmp}/rkprobes-s390x-per-branch}
cc=${CC:-clang-22}
ld=${LD:-ld.lld-22}
qemu=${QEMU:-qemu-system-s390x}
accel=${ACCEL:-tcg}

mkdir -p "$out"
"$cc" --target=s390x-linux-gnu -c "$here/per-branch.S" -o "$out/per-branch.o"
"$ld" -static -nostdlib -T "$here/per-branch.lds" "$out/per-branch.o" \
	-o "$out/per-branch.elf"

"$qemu" --version | head -n 1
set -- -machine s390-ccw-virtio -cpu qemu -accel "$accel" -nographic \
	-kernel "$out/per-branch.elf" "$@"
echo "$qemu $*"
rc=0
timeout 120 nice -n 10 "$qemu" "$@" </dev/null >"$out/console.log" 2>&1 || rc=$?
tr -d '\r' <"$out/console.log"
echo "qemu exit status $rc"

if ! grep -q '^per-branch: RESULT' "$out/console.log"; then
	echo "run.sh: no RESULT line" >&2
	exit 2
fi
if grep -q '^FAIL' "$out/console.log"; then
	exit 1
fi
exit 0
