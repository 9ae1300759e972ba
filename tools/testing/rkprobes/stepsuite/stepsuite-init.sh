#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the initramfs of every step suite (stepsuite.h) in
# `scripts/rkprobes test`: mounts /proc, /sys and debugfs, loads the arch's
# sites (rkprobes_<arch>sites) and then its KUnit module
# rkprobes_<arch>suite (its cases run while insmod runs and print KTAP on
# the console), and reboots. The initramfs holds one arch's two modules
# only, so each pattern names one file.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
echo SS-BEGIN
insmod /lib/modules/rkprobes_*sites.ko
insmod /lib/modules/rkprobes_*suite.ko
echo "SS-INSMOD $?"
echo SS-DONE
reboot -f
