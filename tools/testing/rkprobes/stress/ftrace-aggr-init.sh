#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of `scripts/rkprobes stress --scenario ftrace-aggr` (issue 41): the
# everyday kprobes users of a tracing machine on the same functions at once,
# which on upstream 6.12 leaves an ftrace-site aggregate armed in one ftrace
# ops and disarmed through the other (docs/findings/ftrace-aggregate-disarm.md).
# For rkh_duration seconds, each in its own background loop:
# - events: p: and r: kprobe events on vfs_read, vfs_write, do_sys_openat2
#   and kernel_clone defined, enabled, hit, disabled and removed;
# - modules: insmod of upstream's samples kprobe_example.ko symbol=vfs_read
#   (a probe with a post handler) and kretprobe_example.ko func=vfs_read,
#   then rmmod of both;
# - toggles: every 0.2 s kprobes/enabled 0 then 1 and the
#   debug.kprobes-optimization sysctl 0 then 1, each write checked;
# - load: reading files and forking;
# - monitor: the number of lines of ftrace's enabled_functions, and the
#   lines of the four functions, whenever they change.
# Then it stops the loops (a loop that does not stop within rkh_grace
# seconds is reported, with the tasks in D state, their wchan and stack),
# switches everything back on, removes what is left and checks: every
# kprobes/enabled write succeeded, kprobes/list is empty and no function
# is left in ftrace's enabled_functions. The kernel's hung-task detector
# (a short timeout set here; the host boots with hung_task_panic=1 and
# softlockup_panic=1) reports a hang with stacks; a guest that stops
# printing altogether is stopped by the host after a minute of silence.
#
# Lines: "RKH <key> <value>" (RKH enabled-write-failed, RKH first-failure
# ..., RKH loop <name> <count> <errors>, RKH enabled-functions <n>: <lines>,
# RKH check <name> ok|FAIL <detail>),
# then RKH-DONE.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mkdir -p /tmp
KP=/sys/kernel/debug/kprobes
OPT=/proc/sys/debug/kprobes-optimization
TR=/sys/kernel/tracing
DURATION=${rkh_duration:-60}
GRACE=${rkh_grace:-60}
HUNG=${rkh_hung_timeout:-20}
FUNCS="vfs_read vfs_write do_sys_openat2 kernel_clone"

say() {	# through the kernel log, never cut by a kernel message on the console
	echo "$*" > /dev/kmsg
}

# A task blocked for HUNG seconds is reported (and panics the guest: the
# host boots with hung_task_panic=1); 0 means the kernel has no detector.
if [ -w /proc/sys/kernel/hung_task_timeout_secs ]; then
	echo "$HUNG" > /proc/sys/kernel/hung_task_timeout_secs
	say "RKH hung-task-timeout $HUNG"
else
	say "RKH hung-task-timeout 0"
fi
[ -e /proc/sys/kernel/watchdog_thresh ] && say "RKH softlockup-thresh $(cat /proc/sys/kernel/watchdog_thresh)"
[ -e $OPT ] || say "RKH no-optprobes 1"
echo 1 > /proc/sys/kernel/sysrq 2>/dev/null

write() {	# write VALUE FILE LOOP: a checked write (appending: a truncating
	# open of kprobe_events removes every event); the first failure is named
	if ! echo "$1" 2>/tmp/err.$3 >> "$2"; then
		e=$(cat /tmp/err.$3)
		say "RKH write-failed $3 $1 > $2: ${e#*: }"
		if [ ! -e /tmp/first ]; then
			echo "$3: echo $1 > $2: ${e#*: }" > /tmp/first
			say "RKH first-failure $3: echo $1 > $2: ${e#*: }"
		fi
		return 1
	fi
}

events_loop() {
	n=0 err=0
	while [ ! -e /tmp/stop ]; do
		for f in $FUNCS; do
			write "p:rkh/p_$f $f" $TR/kprobe_events events || err=$((err + 1))
			write "r:rkh/r_$f $f" $TR/kprobe_events events || err=$((err + 1))
		done
		write 1 $TR/events/rkh/enable events || err=$((err + 1))
		cat /proc/version > /dev/null
		usleep 100000
		write 0 $TR/events/rkh/enable events || err=$((err + 1))
		for f in $FUNCS; do
			write "-:rkh/p_$f" $TR/kprobe_events events || err=$((err + 1))
			write "-:rkh/r_$f" $TR/kprobe_events events || err=$((err + 1))
		done
		n=$((n + 1))
	done
	say "RKH loop events $n $err"
	touch /tmp/done.events
}

modules_loop() {
	n=0 err=0
	while [ ! -e /tmp/stop ]; do
		insmod /lib/modules/kprobe_example.ko symbol=vfs_read || err=$((err + 1))
		insmod /lib/modules/kretprobe_example.ko func=vfs_read || err=$((err + 1))
		usleep 300000
		rmmod kprobe_example || err=$((err + 1))
		rmmod kretprobe_example || err=$((err + 1))
		usleep 100000
		n=$((n + 1))
	done
	say "RKH loop modules $n $err"
	touch /tmp/done.modules
}

toggles_loop() {
	n=0 err=0
	while [ ! -e /tmp/stop ]; do
		write 0 $KP/enabled toggles || err=$((err + 1))
		write 1 $KP/enabled toggles || err=$((err + 1))
		if [ -e $OPT ]; then
			write 0 $OPT toggles || err=$((err + 1))
			write 1 $OPT toggles || err=$((err + 1))
		fi
		usleep 200000
		n=$((n + 1))
	done
	say "RKH loop toggles $n $err"
	touch /tmp/done.toggles
}

load_loop() {
	n=0
	while [ ! -e /tmp/stop ]; do
		cat /proc/version /proc/meminfo /init > /dev/null
		ls /proc > /dev/null 2>&1
		/bin/true
		n=$((n + 1))
	done
	say "RKH loop load $n 0"
	touch /tmp/done.load
}

monitor_loop() {	# how many functions ftrace calls kprobes' ops on, when it changes
	last=-1
	while [ ! -e /tmp/stop ]; do
		n=$(grep -c . $TR/enabled_functions)
		if [ "$n" != "$last" ]; then
			say "RKH enabled-functions $n: $(grep -E '^(vfs_read|vfs_write|do_sys_openat2|kernel_clone) ' \
				$TR/enabled_functions | tr -s ' \t' ' ' | tr '\n' ';')"
			last=$n
		fi
		sleep 1
	done
	touch /tmp/done.monitor
}

say "RKH start duration=$DURATION cpus=$(grep -c ^processor /proc/cpuinfo) funcs=$FUNCS"
events_loop &
modules_loop &
toggles_loop &
load_loop &
monitor_loop &
sleep "$DURATION"
touch /tmp/stop
say "RKH stopping"
running() {	# the number of loops that have not ended
	echo $((5 - $(ls /tmp | grep -c '^done\.')))
}
i=0
while [ "$(running)" -gt 0 ] && [ $i -lt "$GRACE" ]; do
	sleep 1
	i=$((i + 1))
done
if [ "$(running)" -gt 0 ]; then
	say "RKH stuck loops $(running) of 5 after $GRACE s:$(for l in events modules toggles load monitor; do [ -e /tmp/done.$l ] || printf ' %s' $l; done); blocked tasks follow"
	echo w > /proc/sysrq-trigger 2>/dev/null
	for d in /proc/[0-9]*; do	# the tasks in D state, where they wait
		st=$(sed 's/^.*) //' $d/stat 2>/dev/null | cut -d' ' -f1)
		[ "$st" = D ] || continue
		say "RKH blocked ${d#/proc/} $(cat $d/comm 2>/dev/null) wchan $(cat $d/wchan 2>/dev/null):" \
			"$(cat $d/stack 2>/dev/null | cut -d' ' -f2 | head -8 | tr '\n' ' ')"
	done
	sleep 2
	say "RKH-DONE"
	reboot -f
fi
say "RKH stopped after $i s"

# Everything back on, everything removed.
write 1 $KP/enabled final
[ -e $OPT ] && write 1 $OPT final
echo 0 > $TR/events/rkh/enable 2>/dev/null
echo > $TR/kprobe_events
rmmod kprobe_example 2>/dev/null
rmmod kretprobe_example 2>/dev/null
sleep 1

check() {	# check NAME OK DETAIL
	if [ "$2" = 1 ]; then
		say "RKH check $1 ok $3"
	else
		say "RKH check $1 FAIL $3"
	fi
}
if [ -e /tmp/first ]; then
	check writes 0 "$(cat /tmp/first)"
else
	check writes 1 "every write succeeded"
fi
left=$(grep -c . $KP/list)
check list "$([ "$left" = 0 ] && echo 1)" "kprobes/list lines: $left"
grep . $KP/list | while read -r ln; do say "RKH listed $ln"; done
fns=$(grep -c . $TR/enabled_functions)
check ftrace "$([ "$fns" = 0 ] && echo 1)" "functions in enabled_functions: $fns"
grep . $TR/enabled_functions | head -5 | while read -r ln; do say "RKH enabled-function $ln"; done
check enabled "$([ "$(cat $KP/enabled)" = 1 ] && echo 1)" "kprobes/enabled reads $(cat $KP/enabled)"
say "RKH-DONE"
reboot -f
