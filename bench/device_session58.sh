#!/usr/bin/env bash
# Session 58's first call (from the repo root, carrying .pk1/): round 51 on an H200
# (bench/device_round51.sh); on another card, the CUDA check of session 57's harness changes
# instead (bench/device_harness_check.sh), so that a machine lent where an H200 was asked
# for is not started for nothing.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash bench/device_round51.sh
else
  bash bench/device_harness_check.sh
fi
