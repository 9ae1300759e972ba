#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the riscv behaviour suite's initramfs of `scripts/rkprobes test`:
# mounts /proc, /sys and debugfs, loads the sites (rkprobes_rvsites) and
# the KUnit module rkprobes_rvsuite (its cases run while insmod runs and
# print KTAP on the console), and reboots.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
echo RS-BEGIN
insmod /lib/modules/rkprobes_rvsites.ko
insmod /lib/modules/rkprobes_rvsuite.ko
echo "RS-INSMOD $?"
echo RS-DONE
reboot -f
