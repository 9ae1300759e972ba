#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of `scripts/rkprobes stress --scenario kretprobe-grow` (issue 40):
# loads rkprobes_kretgrow.ko (see rkg_main.c) and runs its phases: a
# kretprobe with C's fixed pool, one with grow_max, then an r: event of
# kprobe_events on the same function with debug.kretprobe-grow 0 and 1024
# (the Rust core's sysctl: without it, as on C, the second event is skipped,
# saying so), then the pool accounting; ends with RKG-DONE.
#
# Kernel command line: rkg_waves (default 16), rkg_sleepers (default 256).

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
KP=/sys/kernel/debug/kprobes
TR=/sys/kernel/tracing
RUN=/sys/module/rkprobes_kretgrow/parameters/run
SYSCTL=/proc/sys/debug/kretprobe-grow

say() {
	echo "$*" > /dev/kmsg
}

# One r: event on rkg_sleep_in() for a plain phase; prints its hits and misses
# from kprobe_profile.
event_phase() {
	name=$1
	if ! echo "r:rkg/ev_$name rkg_sleep_in" >> "$TR/kprobe_events"; then
		say "RKG event $name create-failed"
		return
	fi
	echo 1 > "$TR/events/rkg/ev_$name/enable"
	# One wave at a time: kprobe_profile's returns (hits) and misses after each.
	i=1
	hits=0
	missed=0
	while [ "$i" -le "$WAVES" ]; do
		echo plain-wave > "$RUN" || say "RKG event $name run-failed"
		set -- $(grep " ev_$name " "$TR/kprobe_profile")
		say "RKG event-wave $name $i returns=$(($2 - hits)) missed=$(($3 - missed))"
		hits=$2
		missed=$3
		i=$((i + 1))
	done
	say "RKG event $name hits=$hits missed=$missed events=$(grep -c "rkg_sleep_in" "$TR/trace")"
	echo 0 > "$TR/events/rkg/ev_$name/enable"
	echo "-:rkg/ev_$name" >> "$TR/kprobe_events"
	echo > "$TR/trace"
}

WAVES=${rkg_waves:-16}
if insmod /lib/modules/rkprobes_kretgrow.ko waves="$WAVES" \
	sleepers="${rkg_sleepers:-256}"; then
	echo fixed > "$RUN" || say "RKG phase fixed failed"
	echo grow > "$RUN" || say "RKG phase grow failed"
	if [ -d "$TR" ] && [ -f "$TR/kprobe_events" ]; then
		echo 4096 > "$TR/buffer_size_kb"
		event_phase fixed
		if [ -f "$SYSCTL" ]; then
			echo 1024 > "$SYSCTL"
			event_phase grow
			echo 0 > "$SYSCTL"
		else
			say "RKG event grow skipped: no debug.kretprobe-grow (the C core has no growing pools)"
		fi
	else
		say "RKG event skipped: no kprobe_events"
	fi
	echo account > "$RUN"
	rmmod rkprobes_kretgrow
	say "RKG rmmod $?"
else
	say "RKG insmod-failed $?"
fi
n=$(grep -c rkg_ "$KP/list")
say "RKG listed $n"
# With kmemleak built in (--debug kmemleak): what the module, its kretprobes and
# their pools left behind, after two scans (an object must be seen unreferenced
# twice to be reported).
ML=/sys/kernel/debug/kmemleak
if [ -e $ML ]; then
	echo scan > $ML
	sleep 1
	echo scan > $ML
	say "RKG kmemleak-objects $(grep -c 'unreferenced object' $ML)"
	grep -A12 'unreferenced object' $ML | head -60 | while read -r ln; do say "RKG kmemleak: $ln"; done
fi
say "RKG-DONE"
reboot -f
