#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the conformance initramfs of `scripts/rkprobes test`: mounts what
# the suite reads and writes, loads the KUnit module rkprobes_conformance
# (its cases run while insmod runs and print KTAP on the console), and
# reboots. The cases themselves start busybox (call_usermodehelper) to reach
# debugfs, tracefs and sysctl files and to load and unload
# rkprobes_conf_target.ko; they write their output to /tmp.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
mkdir -p /tmp
echo RKC-BEGIN
insmod /lib/modules/rkprobes_conformance.ko
echo "RKC-INSMOD $?"
echo RKC-DONE
reboot -f
