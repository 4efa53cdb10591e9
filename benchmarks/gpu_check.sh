#!/usr/bin/env bash
# The GPU path on one CUDA machine, in under 5 minutes: training step time and MFU (float32, bf16
# autocast, torch.compile), probe time, then the test suite's CUDA cases (no-peek, resume).
# Usage: benchmarks/gpu_check.sh   (pass --tiny to check the script itself on any machine)
set -euo pipefail
cd "$(dirname "$0")/.."
python3 benchmarks/gpu_check.py "$@"
if python3 -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    python3 -m pytest -q -k cuda tests
fi
