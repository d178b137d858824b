#!/usr/bin/env bash
# train_side_by_side.sh: the lm training step of the benchmark recipe, posformer against its
# PyTorch twin (train_twin.py), on 2 threads and on 1, float32 and bf16, the engines alternated
# within every round. Prints a Markdown table (median ms a step, min-max over rounds) headed by
# the CPU.
#
#   REPO=$PWD [ROUNDS=3] [STEPS=4] [TWIN_BF16_STEPS=$STEPS] [PYTHON=/usr/bin/python3] \
#     bash benchmarks/peers/train_side_by_side.sh
#
# TWIN_BF16_STEPS shortens PyTorch's bf16 runs, which take tens of seconds a step on a CPU without
# AVX512_BF16 (autocast then rounds every operand in software).
#
# posformer's step is BenchmarkTrainStep/v2-lm (one pass over 32 sequences of 128 bytes, AdamW),
# on GOMLX_BACKEND=cpu (float32) or cpu:bf16dot=true (bf16 products), with GOMAXPROCS threads.
# The twin builds the same model with an untied head, as the benchmark does, and runs under
# torch.autocast("cpu", dtype=torch.bfloat16) for bf16. PyTorch must use an optimized BLAS (see
# README.md here): its reference BLAS is ~25x slower.
#
# A background job that should not run while timing can be paused: PAUSE_PATTERN is a pgrep -f
# pattern (default 'grid-bench --full'); its processes get SIGSTOP before every timed run and
# SIGCONT after it, and the trap below resumes them on any exit or interrupt.
set -euo pipefail
REPO=${REPO:-$PWD}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-4}
TWIN_BF16_STEPS=${TWIN_BF16_STEPS:-$STEPS}
PYTHON=${PYTHON:-/usr/bin/python3}
PAUSE_PATTERN=${PAUSE_PATTERN:-grid-bench --full}
WORK=$(mktemp -d)

. "$(dirname "$0")/pause.sh"
trap 'resume; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

(cd "$REPO" && go test -c -o "$WORK/bench.test" ./benchmarks/) >&2

# posformer THREADS DTYPE: ms a step.
posformer() {
	local backend=cpu
	[ "$2" = bf16 ] && backend=cpu:bf16dot=true
	pause
	local out
	out=$(cd "$REPO/benchmarks" && GOMAXPROCS=$1 GOMLX_BACKEND=$backend "$WORK/bench.test" -test.run '^$' \
		-test.bench 'TrainStep$/v2-lm$' -test.benchtime "${STEPS}x")
	resume
	echo "$out" | awk '/ns\/op/ { for (i = 1; i < NF; i++) if ($(i+1) == "ns/op") printf "%.1f\n", $i / 1e6 }'
}

# twin THREADS DTYPE: ms a step (and the parameters and first loss, to stderr).
twin() {
	local steps=$STEPS
	[ "$2" = bf16 ] && steps=$TWIN_BF16_STEPS
	pause
	local out
	out=$(OMP_NUM_THREADS=$1 "$PYTHON" "$REPO/benchmarks/peers/train_twin.py" --threads "$1" --dtype "$2" \
		--steps "$steps" --untied --json)
	resume
	echo "twin $1 threads $2: $out" >&2
	echo "$out" | "$PYTHON" -c 'import json, sys; print("%.1f" % json.load(sys.stdin)["ms"])'
}

for r in $(seq "$ROUNDS"); do
	for t in 2 1; do
		for d in f32 bf16; do
			echo "posformer $t $d $(posformer "$t" "$d")" >>"$WORK/times"
			echo "pytorch $t $d $(twin "$t" "$d")" >>"$WORK/times"
			echo "round $r: $(tail -2 "$WORK/times" | tr '\n' ' ')" >&2
		done
	done
done

model="$(lscpu | sed -n 's/^Model name: *//p'), family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p')"
flags=$(lscpu | sed -n 's/^Flags: *//p' | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512_bf16|avx512_vnni|amx_bf16|amx_tile)$' | tr '\n' ' ')
torchv=$("$PYTHON" -c 'import torch; print(torch.__version__)')
echo "CPU: $(nproc) vCPUs of $model; flags: ${flags% }. PyTorch $torchv. $ROUNDS rounds of $STEPS timed steps ($TWIN_BF16_STEPS for PyTorch bf16) after one untimed; median ms a step (min-max over rounds)."
echo
"$PYTHON" - "$WORK/times" <<'EOF'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    eng, th, d, ms = line.split()
    t.setdefault((eng, th, d), []).append(float(ms))
def cell(v):
    return "%.0f (%.0f-%.0f)" % (statistics.median(v), min(v), max(v))
print("| lm step, 32 × 128 tokens | posformer ms | PyTorch ms | PyTorch ÷ posformer |")
print("| --- | ---: | ---: | ---: |")
for th in ("2", "1"):
    for d in ("f32", "bf16"):
        p, q = t[("posformer", th, d)], t[("pytorch", th, d)]
        name = "%s thread%s, %s" % (th, "s" if th != "1" else "", "float32" if d == "f32" else "bf16")
        print("| %s | %s | %s | %.2f |" % (name, cell(p), cell(q), statistics.median(q) / statistics.median(p)))
EOF
