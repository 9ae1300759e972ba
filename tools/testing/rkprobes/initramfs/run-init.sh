#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the `scripts/rkprobes run` initramfs: shows kprobes at work the
# way a user sees them, and marks each step for the host:
#   RKPROBES-STEP <name> OK|FAIL <what was checked>
# The host prints the sections between "### <title>" lines and fails the
# run if any step failed or RKPROBES-DONE never came.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
KP=/sys/kernel/debug/kprobes
TR=/sys/kernel/tracing

step() {	# step NAME CONDITION-STATUS WHAT
	if [ "$2" = 0 ]; then echo "RKPROBES-STEP $1 OK $3"; else echo "RKPROBES-STEP $1 FAIL $3"; fi
}
section() { echo; echo "### $*"; }
forks() { for i in 1 2 3 4 5; do /bin/true; done; }
count() { dmesg | grep -c -e "$1"; }
# kprobe_example prints, with the arch's register names, three fields before
# the probed instruction ("<sym> p->addr = 0x..., ip = ..., flags = ..." on
# x86) and two after ("<sym> p->addr = 0x..., flags = ..."); s390 writes
# "p->addr, 0x...", and the pointer can be "0x(____ptrval____)" early on.
PRE="<kernel_clone> p->addr[ =,]* 0x[^,]*, [a-z]* = [^,]*, [a-z]* = "
POST="<kernel_clone> p->addr[ =,]* 0x[^,]*, [a-z]* = [^,]*$"

section "loading upstream's samples/kprobes modules (probing kernel_clone)"
insmod /lib/modules/kprobe_example.ko; step insmod-kprobe_example $? "insmod kprobe_example.ko"
insmod /lib/modules/kretprobe_example.ko; step insmod-kretprobe_example $? "insmod kretprobe_example.ko"
dmesg | grep -E "Planted (kprobe|return probe)"
forks
section "handler output after 5 forks (dmesg)"
dmesg | grep -E "<kernel_clone> p->addr|kernel_clone returned" | tail -n 6
[ "$(count "$PRE")" -gt 0 ] && [ "$(count "$POST")" -gt 0 ]
step kprobe-handlers-fire $? "kprobe pre and post handlers printed"
[ "$(count 'kernel_clone returned')" -gt 0 ]; step kretprobe-handler-fires $? "kretprobe handler printed"

section "cat $KP/list"
cat $KP/list
grep -q " kernel_clone+" $KP/list; step list-shows-probes $? "kernel_clone is in kprobes/list"

section "cat $KP/enabled; echo 0 > enabled; fork; echo 1 > enabled; fork"
echo "enabled: $(cat $KP/enabled)"
echo 0 > $KP/enabled
echo "after writing 0: enabled: $(cat $KP/enabled)"
before=$(count "$PRE")
forks
after=$(count "$PRE")
echo "pre_handler lines while disarmed: $before before 5 forks, $after after"
[ "$(cat $KP/enabled)" = 0 ] && [ "$before" = "$after" ]; step disarm-all $? "no hits while disarmed"
echo 1 > $KP/enabled
echo "after writing 1: enabled: $(cat $KP/enabled)"
forks
again=$(count "$PRE")
echo "pre_handler lines after re-arming and 5 forks: $again"
[ "$(cat $KP/enabled)" = 1 ] && [ "$again" -gt "$after" ]; step rearm-all $? "hits again after re-arming"

section "/proc/sys/debug/kprobes-optimization, with a probe inside vfs_read"
OPT=/proc/sys/debug/kprobes-optimization
opt() { grep "vfs_read+" $KP/list; }
# The optimizer runs from delayed work after an RCU-tasks grace period.
wait_opt() {
	i=0
	while [ $i -lt 15 ]; do opt | grep -q OPTIMIZED && return 0; sleep 1; i=$((i + 1)); done
	return 1
}
if [ ! -e $OPT ]; then
	# The host knows which arches have optprobes and fails the run if one
	# of them gets here.
	echo "no $OPT: this kernel has no optprobes (none on this arch upstream)"
	echo "RKPROBES-SKIP optimization this kernel has no optprobes"
else
	# An optimizable probe: past the entry (x86's ftrace site, ppc64's TOC
	# setup), on the first offset that registers (x86 refuses non-boundaries
	# with -EILSEQ, ppc64 unaligned ones with -EINVAL) and that the arch
	# optimizes (ppc64 only instructions it can emulate without memory).
	off=5
	while [ $off -le 64 ]; do
		if echo "p:rkprobes/opt vfs_read+$off" >> $TR/kprobe_events 2>/dev/null; then
			echo 1 > $TR/events/rkprobes/opt/enable
			wait_opt && break
			echo "vfs_read+$off registered but not optimized; trying the next offset"
			echo 0 > $TR/events/rkprobes/opt/enable
			echo "-:rkprobes/opt" >> $TR/kprobe_events
		fi
		off=$((off + 1))
	done
	echo "kprobes-optimization: $(cat $OPT)"
	opt
	opt | grep -q OPTIMIZED; step optimized $? "the vfs_read+$off probe is [OPTIMIZED]"
	echo 0 > $OPT
	echo "after writing 0: $(cat $OPT)"
	opt
	[ "$(cat $OPT)" = 0 ] && ! opt | grep -q OPTIMIZED
	step sysctl-off $? "optimization off: the probe lost [OPTIMIZED]"
	echo 1 > $OPT
	wait_opt
	echo "after writing 1: $(cat $OPT)"
	opt
	[ "$(cat $OPT)" = 1 ] && opt | grep -q OPTIMIZED
	step sysctl-on $? "optimization on: [OPTIMIZED] again"
	echo 0 > $TR/events/rkprobes/opt/enable
	echo "-:rkprobes/opt" >> $TR/kprobe_events
fi

section "kprobe_events: p: and r: probes on do_sys_openat2"
echo 'p:rkprobes/open do_sys_openat2 dfd=$arg1' > $TR/kprobe_events; s1=$?
echo 'r:rkprobes/open_ret do_sys_openat2 ret=$retval' >> $TR/kprobe_events; s2=$?
[ $s1 = 0 ] && [ $s2 = 0 ]; step kprobe-events-define $? "defined p: and r: events"
cat $TR/kprobe_events
echo 1 > $TR/events/rkprobes/enable
cat /proc/version > /dev/null
echo 0 > $TR/events/rkprobes/enable
grep -E "rkprobes/|open(_ret)?:" $KP/list
grep -E " (open|open_ret):" $TR/trace | tail -n 4
# Where the ring buffer refuses a record written from a breakpoint (NMI
# context: riscv 6.12 lacks ARCH_HAVE_NMI_SAFE_CMPXCHG), a p: event on a
# breakpoint probe counts its hits in kprobe_profile and writes nothing to
# the trace, on C too; the host says so on the command line.
if grep -q "rkprobes.p_event_hits=profile" /proc/cmdline; then
	hits=$(awk '$1 == "open" { print $2 }' $TR/kprobe_profile)
	echo "open: ${hits:-no} hits in kprobe_profile (no trace record from a breakpoint probe on this arch)"
	[ "${hits:-0}" -gt 0 ]; step kprobe-event-p-fires $? "p: event hit, counted in kprobe_profile"
else
	grep -q " open: " $TR/trace; step kprobe-event-p-fires $? "p: event in the trace"
fi
grep -q " open_ret: " $TR/trace; step kprobe-event-r-fires $? "r: event in the trace"
echo > $TR/kprobe_events; step kprobe-events-remove $? "events removed"

section "unloading the samples"
rmmod kprobe_example; s1=$?
rmmod kretprobe_example; s2=$?
dmesg | grep -E "(kprobe|kretprobe) at .* unregistered" | tail -n 2
echo "kprobes/list now:"
cat $KP/list
[ $s1 = 0 ] && [ $s2 = 0 ] && ! grep -q kernel_clone $KP/list; step unload $? "list empty of the samples' probes"

section "loading the Rust samples (samples/rust, probing kernel_clone)"
insmod /lib/modules/rust_kprobe.ko; step insmod-rust_kprobe $? "insmod rust_kprobe.ko"
insmod /lib/modules/rust_kretprobe.ko; step insmod-rust_kretprobe $? "insmod rust_kretprobe.ko"
dmesg | grep -E "rust_k(ret)?probe: Planted"
forks
section "Rust handler output after 5 forks (dmesg)"
dmesg | grep -E "rust_kprobe: <kernel_clone> (pre|post)_handler|rust_kretprobe: kernel_clone returned" | tail -n 6
[ "$(count 'rust_kprobe: <kernel_clone> pre_handler')" -gt 0 ]; step rust-kprobe-pre-fires $? "Rust kprobe pre handler printed"
[ "$(count 'rust_kprobe: <kernel_clone> post_handler')" -gt 0 ]; step rust-kprobe-post-fires $? "Rust kprobe post handler printed"
[ "$(count 'rust_kretprobe: kernel_clone returned')" -gt 0 ]; step rust-kretprobe-fires $? "Rust kretprobe return handler printed"
section "cat $KP/list (Rust samples loaded)"
cat $KP/list
grep -qE "  k  kernel_clone\+" $KP/list && grep -qE "  r  kernel_clone\+" $KP/list
step rust-list-shows-probes $? "the Rust kprobe and kretprobe are in kprobes/list"
section "unloading the Rust samples"
rmmod rust_kprobe; s1=$?
rmmod rust_kretprobe; s2=$?
dmesg | grep -E "rust_k(ret)?probe: (k(ret)?probe at .* unregistered|Missed probing)" | tail -n 3
echo "kprobes/list now:"
cat $KP/list
[ $s1 = 0 ] && [ $s2 = 0 ] && ! grep -q kernel_clone $KP/list
step rust-unload $? "list empty of the Rust samples' probes"

echo RKPROBES-DONE
reboot -f
