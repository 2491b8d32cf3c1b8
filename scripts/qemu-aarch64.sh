#!/usr/bin/env bash
# Runs an aarch64 Linux binary under qemu-user with the cross toolchain's
# libraries: the CPU model is FOLIO_QEMU_CPU (default "max": NEON with
# dotprod, i8mm, SVE...; "cortex-a72" has NEON without dotprod).
exec qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "${FOLIO_QEMU_CPU:-max}" "$@"
