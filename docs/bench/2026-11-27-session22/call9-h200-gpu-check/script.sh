#!/usr/bin/env bash
# Session 22 call 9 (H200): the clean-state check of 96bbbd3, all of ../shared/data carried as .data
ISO_ONLY=1 OUT=/tmp/gc timeout 585 scripts/gpu-check.sh > /tmp/gc-stdout.txt 2>&1; echo "rc=$?"; cat /tmp/gc/summary.txt; mkdir -p $OUT; tar czf $OUT/gc.tgz -C /tmp gc gc-stdout.txt
