#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of `scripts/rkprobes stress --race`: the kprobes/enabled race of
# upstream 6.12, which leaves an int3 in the text without its kprobe.
#
# Every iteration defines a kprobe event at +9 of several hundred kernel
# functions (after the ENDBR and the fentry NOP of an x86 function entry;
# kprobe_events refuses what it cannot probe), enables them, waits until
# the optimizer has put jumps at most of them, then writes 0 to the
# optimization sysctl in the background (which queues every optimized probe
# for unoptimizing, drops kprobe_mutex and waits for the optimizer) and,
# 2 ms later, 0 to kprobes/enabled (which takes kprobe_mutex before the
# optimizer, finds the probes queued and leaves their disarming to the
# optimizer, which in upstream 6.12 disarms only disabled probes). Then it
# disables and removes the events while kprobes are globally disabled:
# upstream leaves the int3 of such a probe without its kprobe, and the next
# call of that function is an "Oops: int3". Between iterations it calls a
# few functions and switches everything back on.
#
# Kernel command line: rkr_iterations (default 20), rkr_funcs (default 600).
# Lines: "RKR iter N ...", "RKR survived N", then RKR-DONE.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
TR=/sys/kernel/tracing
KP=/sys/kernel/debug/kprobes
OPT=/proc/sys/debug/kprobes-optimization
ITERATIONS=${rkr_iterations:-20}
FUNCS=${rkr_funcs:-600}

say() {
	echo "$*" > /dev/kmsg
}

awk '$2 ~ /^[tT]$/ && NF == 3 && $3 !~ /^_/ && $3 !~ /\./ { print $3 }' /proc/kallsyms |
	awk 'NR % 7 == 0' | head -"$FUNCS" > /funcs
iter=0
while [ $iter -lt "$ITERATIONS" ]; do
	iter=$((iter + 1))
	i=0
	while read -r f; do
		i=$((i + 1))
		echo "p:rkr/p$i $f+9" >> $TR/kprobe_events 2>/dev/null
	done < /funcs
	echo 1 > $TR/events/rkr/enable
	j=0
	while [ "$(grep -c OPTIMIZED $KP/list)" -lt 50 ] && [ $j -lt 100 ]; do
		usleep 100000
		j=$((j + 1))
	done
	say "RKR iter $iter events $(grep -c . $TR/kprobe_events) optimized $(grep -c OPTIMIZED $KP/list)"
	echo 0 > $OPT &
	usleep 2000
	echo 0 > $KP/enabled
	wait
	echo 0 > $TR/events/rkr/enable
	echo > $TR/kprobe_events
	say "RKR iter $iter removed, kprobes/list $(grep -c . $KP/list)"
	cat /proc/version > /dev/null
	ls /proc > /dev/null
	echo 1 > $KP/enabled
	echo 1 > $OPT
	say "RKR survived $iter"
done
say RKR-DONE
reboot -f
