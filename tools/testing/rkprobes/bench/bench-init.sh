#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the `scripts/rkprobes bench` initramfs. It loads rkprobes_bench.ko
# and drives it case by case through its debugfs ctl file; the module logs
# "RKB ..." result lines, this script adds its own (which kprobes path a
# case took, memory snapshots) and at the end prints the module's log, then
# RKB-DONE. The host parses all "RKB" lines; a failed command is reported
# as "RKB error <command>" and the run goes on.
#
# Kernel command line parameters the host may pass (unknown ones reach
# /init as environment variables): rkb_calls, rkb_reps; and from
# `rkprobes profile --bench-sequence`, rkb_profile (the command to trace,
# '_' for ' '; "bulk-unreg KIND N" traces the unregistration of "bulk KIND N"
# alone, the other bulk cases left out) and rkb_profile_wait (wait for the host before it);
# rkb_no_bulk (bench --no-bulk) leaves out the bulk registration rows,
# rkb_bulk_big (bench --bulk-big) adds the one of 10000 vmlinux functions.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
KP=/sys/kernel/debug/kprobes
CTL=/sys/kernel/debug/rkprobes_bench/ctl
OPT=/proc/sys/debug/kprobes-optimization

ctl() {	# ctl COMMAND...: one command of the benchmark module
	if [ -n "$rkb_profile" ] && [ "$*" = "$(echo "$rkb_profile" | tr _ ' ')" ]; then
		profile_ctl "$@"
	fi
	# "bulk-unreg KIND N": the unregistration of "bulk KIND N" alone, registered untraced.
	# The other bulk cases are left out: under QEMU's tracing (no chained blocks from the
	# start) C's thousands of registrations before it would take most of an hour.
	case "$rkb_profile" in bulk-unreg_*)
		case "$1" in
		bulk-validate)	# what the vmlinux rows take their functions from
			case "$rkb_profile" in bulk-unreg_vmlinux_*) ;; *) return 0 ;; esac ;;
		bulk)
			[ "bulk-unreg $2 $3" = "$(echo "$rkb_profile" | tr _ ' ')" ] || return 0
			echo "$* split" > $CTL || echo "RKP error $* split"
			profile_ctl bulk-unreg "$2" "$3" ;;
		esac
	esac
	echo "$*" > $CTL || echo "RKB error $*"
}

profile_ctl() {	# the command `rkprobes profile` traces, between two markers; the end
	if [ -n "$rkb_profile_wait" ]; then
		echo RKP-PROFILE-START
		read -r go
	fi
	cat $KP/enabled >/dev/null
	echo "$*" > $CTL || echo "RKP error $*"
	cat $KP/enabled >/dev/null
	echo RKP-PROFILE-STOP
	dmesg | grep 'RKB reg'
	echo RKP-PROFILE-DONE
	reboot -f
}

settle() {	# let the optimizer run (it starts 5 jiffies after a change)
	sleep 1
}

path() {	# path CASE SYMBOL: the flags kprobes/list shows for SYMBOL
	flags=$(grep " $2+" $KP/list | grep -o '\[[A-Z]*\]' | sort -u | tr -d '\n')
	echo "RKB path $1 ${flags:--}"
}

wait_optimized() {	# wait_optimized SYMBOL-PREFIX COUNT
	i=0
	while [ "$(grep " $1" $KP/list | grep -c OPTIMIZED)" -lt "$2" ] && [ $i -lt 60 ]; do
		sleep 1
		i=$((i + 1))
	done
}

optimizer_idle() {	# until the optimizer has freed what unregistered probes left to it
	# Writing 0 waits for the optimizer (wait_for_kprobe_optimizer()): it frees the
	# aggregates of unregistered optimized probes 256 per round, after they have left
	# kprobes/list. Writing 1 again optimizes nothing, as nothing is registered.
	echo 0 > $OPT
	echo 1 > $OPT
}

mem() {	# mem CASE before|after [PROBES]: kB of slab, vmalloc and per-CPU memory
	# Wait a second without starting a process (read from a FIFO nobody writes), so
	# that no task of ours is half freed, then have every kmalloc cache give back
	# its empty slabs: the snapshot then counts the slabs that hold the probes'
	# objects, not the reserve of empty slabs that earlier cases left (issue 42).
	read -t 1 _ <> /rkb-quiet
	ctl shrink
	echo 1 > /proc/sys/vm/stat_refresh
	while read -r key val unit; do
		case $key in
		Slab:) slab=$val ;;
		VmallocUsed:) vmalloc=$val ;;
		Percpu:) percpu=$val ;;
		esac
	done < /proc/meminfo
	echo "RKB mem $1 $2 $slab $vmalloc $percpu $3"
}

hit() {	# hit CASE SITE SYMBOL: measure what is armed, then disarm
	path "$1" "$3"
	ctl measure "$1" "$2"
	ctl disarm
	# An unregistered optimized probe stays in the table until the
	# optimizer has undone it; the next case must not find it there.
	settle
}

insmod /lib/modules/rkprobes_bench.ko calls="${rkb_calls:-1000}" reps="${rkb_reps:-5}" ||
	echo "RKB error insmod rkprobes_bench.ko"
echo "RKB optimization $(cat $OPT)"
ctl calib

# int3 and the copied instruction stepped out of line: a post handler keeps
# the probe from being boosted or optimized.
ctl kprobe target post; settle; hit kprobe-post target rkb_target

# Boosted: the same probe without a post handler, the optimizer switched off.
echo 0 > $OPT
ctl kprobe target pre; settle; hit kprobe-boost target rkb_target
echo 1 > $OPT

# Optimized: the same, once the optimizer has replaced int3 by a jump.
ctl kprobe target pre; wait_optimized rkb_target 1; hit kprobe-opt target rkb_target

# On the ftrace call site of a traced function.
ctl kprobe traced pre; settle; hit kprobe-ftrace traced rkb_traced

ctl kretprobe target; settle; hit kretprobe target rkb_target
ctl kretprobe target 1024; settle; hit kretprobe-grow target rkb_target
ctl kprobe target pre; ctl kretprobe target; settle; hit kprobe+kretprobe target rkb_target

# Hash scaling: the int3 kprobe registered first, then N others elsewhere.
for n in 1 64 4096; do
	ctl kprobe target post; ctl fill $n post; settle; hit "hash-$n" target rkb_target
done

# Instructions not stepped as they are, each in its own function: a
# conditional jump and a call, emulated in the int3 handler, and a
# RIP-relative load, stepped out of line with its displacement adjusted.
# A post handler keeps them on int3, as for kprobe-post.
ctl kprobe jcc post; settle; hit kprobe-jcc jcc rkb_jcc
ctl kprobe call post; settle; hit kprobe-call call rkb_call
ctl kprobe riprel post; settle; hit kprobe-riprel riprel rkb_riprel

# Registration waits for RCU grace periods. A normal grace period ends on a
# timer tick, so a call would take whole ticks, the same on both cores, plus
# what runs after the last tick, where the rest of the kernel (the timers
# that expire on that tick, the scheduler's load averages) varies by hundreds
# of instructions between repetitions. Expedited grace periods (as while the
# kernel boots) end when their work is done: a call's time is then its work.
echo 1 > /sys/kernel/rcu_expedited
ctl reg1
ctl regn 100
ctl regn 1000

# Bulk registration: kprobes by name, one per function, on vmlinux functions
# (candidates from /proc/kallsyms, evenly spread, each validated alone by
# the module, untimed) and on the module's rkb_mf_NNNN; kretprobes on the
# latter. Most vmlinux entries are ftrace sites, where C updates the ftrace
# call sites of the whole kernel for every probe (a run with 10000 of them
# had not finished C's boot after 20 minutes), so that row comes only with
# rkb_bulk_big
# (bench --bulk-big). The optimizer is off (registration still prepares each
# probe for it) so that no optimization runs between the timed calls, but for
# the "module-opt" row, run with it at its default (on), where each probe's
# detour is prepared and C's per-probe optimizer work is real.
if [ -z "$rkb_no_bulk" ]; then
	echo 0 > $OPT
	awk '$2 ~ /^[tT]$/ && NF == 3 && $3 !~ /^__(pfx|cfi)_/ && !seen[$3]++ { print $3 }' \
		/proc/kallsyms > /funcs
	total=$(wc -l < /funcs)
	want=3000
	vsizes="100 1000"
	if [ -n "$rkb_bulk_big" ]; then
		want=30000
		vsizes="100 1000 10000"
	fi
	step=$(((total + want - 1) / want))
	awk -v s=$step 'NR % s == 0' /funcs > /sys/kernel/debug/rkprobes_bench/syms ||
		echo "RKB error writing the candidate functions"
	echo "RKB bulkcand $total $step"
	ctl bulk-validate
	for n in $vsizes; do ctl bulk vmlinux $n; done
	insmod /lib/modules/rkprobes_bench_mf.ko || echo "RKB error insmod rkprobes_bench_mf.ko"
	for n in 100 1000 10000; do ctl bulk module $n; done
	ctl bulk kretprobe 1000
	# The optimizer at its default (on): each probe of the batch gets an
	# aggregate and a detour prepared, and is queued to be optimized.
	echo 1 > $OPT
	ctl bulk module-opt 1000
	settle	# the optimizer frees the unregistered aggregates
	rmmod rkprobes_bench_mf || echo "RKB error rmmod rkprobes_bench_mf"
fi
echo 0 > /sys/kernel/rcu_expedited

# Memory: snapshots around registering many probes on filler sites, each
# "before" once the optimizer has finished with the previous case's probes.
mkfifo /rkb-quiet
settle; optimizer_idle; mem kprobe before
ctl fill 1000 post; settle; mem kprobe after 1000; ctl disarm
settle; optimizer_idle; mem optprobe before
ctl fill 1000 pre; wait_optimized rkb_fill_ 1000
echo "RKB count optprobe $(grep ' rkb_fill_' $KP/list | grep -c OPTIMIZED)"
mem optprobe after 1000; ctl disarm
settle; optimizer_idle; mem kretprobe before
ctl fillret 256; settle; path kretprobe-mem rkb_fill_00
mem kretprobe after 256; ctl disarm

dmesg | grep 'rkprobes_bench: '
echo RKB-DONE
reboot -f
