#!/usr/bin/env bash
# The recipe of the shipped model (aiayn_helpers/pretrained/multi30k), run on one GPU:
#   AIAYN_DATA_DIR=... bash tools/ship/train_shipped.sh RUN_DIR EXPORT_DIR
# 1. train the multi30k preset, keeping every epoch's weights;
# 2. choose last-or-averaged weights, beam size and length penalty on val only;
# 3. export the choice as float16 safetensors (test2016 is scored afterwards, once,
#    on a CPU, by tools/ship/export_pretrained.py --rescore).
set -euo pipefail
run=${1:?run folder}; export_dir=${2:?export folder}
python="${PYTHON:-python3}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the tools import the package from here
(while true; do echo "$(date +%T) $(cat /proc/loadavg)"; sleep 30; done) >"$run.loadavg" &
sampler=$!
trap 'kill $sampler' EXIT
start=$(date +%s)
$python -m aiayn_helpers.train --preset "${PRESET:-multi30k}" --out "$run" --keep-epochs --no-progress \
    --time-budget-min "${BUDGET_MIN:-6}"
trained=$(( $(date +%s) - start ))
echo "trained in ${trained} s"
$python tools/ship/choose_decoding.py "$run" --average 0 5 --beam-size 4 6 \
    --length-penalty 0.6 1.0 1.4 2.0 --out "$run/choice.json" ${VAL_LIMIT:+--limit $VAL_LIMIT}
read -r avg beam alpha < <($python -c "import json,sys; b=json.load(open(sys.argv[1]))['best']; print(b['average'], b['beam_size'], b['length_penalty'])" "$run/choice.json")
gpu=$($python -c "import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else 'CPU')")
$python tools/ship/export_pretrained.py "$run/last.pt" --average "$avg" --beam-size "$beam" \
    --length-penalty "$alpha" --out "$export_dir" --no-bleu --loadavg "$run.loadavg" \
    --command "bash tools/ship/train_shipped.sh $run $export_dir (python -m aiayn_helpers.train --preset multi30k --out $run --keep-epochs; tools/ship/choose_decoding.py on val: average $avg, beam $beam, alpha $alpha)" \
    --hardware "one $gpu, PyTorch $($python -c 'import torch; print(torch.__version__)'), alone on the machine" \
    --time "${trained} s wall for training (40 epochs with validation)"
