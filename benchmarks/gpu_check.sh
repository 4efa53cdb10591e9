#!/usr/bin/env bash
# The GPU path end to end on one CUDA machine: bf16-autocast training of both model families,
# torch.compile, and CUDA evaluation. Usage: benchmarks/gpu_check.sh [OUT_DIR] [GPT_STEPS]
set -uo pipefail
out=${1:-runs/gpu-check}
gpt_steps=${2:-30000}
mkdir -p "$out"
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name(0))"

# LSA, bf16 autocast (the default on CUDA): the von Oswald et al. checks must still pass.
icl-sim repro run von-oswald-2023 --scale quick --device cuda --out "$out/von-oswald-2023" --no-progress &
# A tiny GPT on d = 5, compiled, trained long enough to reach the least-squares curve.
icl-sim train --model gpt --dim 5 --points 11 --steps "$gpt_steps" --batch-size 128 --lr 1e-3 \
    --warmup-steps 1000 --lr-schedule cosine --device cuda --compile --no-progress --log-every 1000 \
    --checkpoint-every 5000 --out "$out/gpt-d5" &
wait
icl-sim eval "$out/gpt-d5" --device cuda
