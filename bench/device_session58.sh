#!/usr/bin/env bash
# Session 58's first call (from the repo root, carrying .pk1/; about 6 minutes on an H200):
# round 51 on an H200 (bench/device_round51.sh), then the CUDA check of session 57's harness
# changes (bench/device_harness_check.sh); on another card the check alone, so that a machine
# lent where an H200 was asked for is not started for nothing.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash bench/device_round51.sh
fi
bash bench/device_harness_check.sh
