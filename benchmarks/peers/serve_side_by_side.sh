#!/usr/bin/env bash
# serve_side_by_side.sh: batched serving, posformer's scheduler (servebatch/, engine/serve as
# cmd/serve runs it) against llama.cpp's batched decoding (llamacpp_batched.c), on the same GGUF
# files and threads, the engines alternated within every round. N streams start at once, each a
# PROMPT-token prompt continued greedily by GEN tokens; the figure is the aggregate generated
# tokens a second (N*GEN over the wall time, the prefill included). Prints a Markdown table
# (median, min-max over rounds) headed by the CPU.
#
#   PEERS=<peers dir> REPO=$PWD [ROUNDS=3] [STREAMS='1 4 16'] [PROMPT=16] [GEN=128] [THREADS=2] \
#     [MODELS='r15m-f32.gguf r15m-q8_0.gguf'] bash benchmarks/peers/serve_side_by_side.sh
#
# PEERS holds llamacpp_batched (built as README.md here says), node_modules/ with llama.cpp's
# libraries, and the MODELS. A background job that should not run while timing can be paused:
# PAUSE_PATTERN is a pgrep -f pattern (default 'grid-bench --full'); its processes get SIGSTOP
# before every timed run and SIGCONT after it, and the trap below resumes them on any exit.
set -euo pipefail
REPO=${REPO:-$PWD}
PEERS=${PEERS:?set PEERS to the directory holding llamacpp_batched and the GGUF files}
ROUNDS=${ROUNDS:-3}
STREAMS=${STREAMS:-1 4 16}
PROMPT=${PROMPT:-16}
GEN=${GEN:-128}
THREADS=${THREADS:-2}
MODELS=${MODELS:-r15m-f32.gguf r15m-q8_0.gguf}
PAUSE_PATTERN=${PAUSE_PATTERN:-grid-bench --full}
L=$PEERS/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
WORK=$(mktemp -d)

. "$(dirname "$0")/pause.sh"
trap 'resume; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

(cd "$REPO" && go build -o "$WORK/servebatch" ./benchmarks/peers/servebatch) >&2

# Each prints "ENGINE streams=N prompt=P gen=G tok/s=X".
llamacpp() {
	pause
	LLAMACPP_LIB_DIR=$L "$PEERS/llamacpp_batched" "$PEERS/$1" "$2" "$PROMPT" "$GEN" "$THREADS" 1 2>/dev/null || true
	resume
}
posformer() {
	pause
	GOMAXPROCS=$THREADS "$WORK/servebatch" -m "$PEERS/$1" -streams "$2" -prompt "$PROMPT" -gen "$GEN" 2>/dev/null || true
	resume
}

for r in $(seq "$ROUNDS"); do
	for m in $MODELS; do
		for n in $STREAMS; do
			for e in llamacpp posformer; do
				line=$($e "$m" "$n" | tail -1)
				echo "round $r $m $e: $line" >&2
				echo "$m $e $n ${line##*tok/s=}" >>"$WORK/rates"
			done
		done
	done
done

model="$(lscpu | sed -n 's/^Model name: *//p'), family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p')"
flags=$(lscpu | sed -n 's/^Flags: *//p' | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512_bf16|avx512_vnni|amx_bf16|amx_tile)$' | tr '\n' ' ')
echo "CPU: $(nproc) vCPUs of $model; flags: ${flags% }. $THREADS threads, prompts of $PROMPT tokens, $GEN generated per stream, $ROUNDS rounds; aggregate generated tok/s, median (min-max)."
echo
python3 - "$WORK/rates" "$STREAMS" <<'EOF'
import statistics, sys
t, models = {}, []
for line in open(sys.argv[1]):
    m, eng, n, rate = line.split()
    if m not in models:
        models.append(m)
    try:
        t.setdefault((m, eng, n), []).append(float(rate))
    except ValueError:  # a failed run
        pass
def med(v):
    return statistics.median(v) if v else float("nan")
def cell(v):
    return "%s (%s-%s)" % tuple(format(round(x), ",") for x in (med(v), min(v), max(v))) if v else "failed"
print("| model | streams | llama.cpp tok/s | posformer tok/s | posformer ÷ llama.cpp |")
print("| --- | ---: | ---: | ---: | ---: |")
for m in models:
    for n in sys.argv[2].split():
        a, b = t.get((m, "llamacpp", n), []), t.get((m, "posformer", n), [])
        print("| %s | %s | %s | %s | %.2f |" % (m, n, cell(a), cell(b), med(b) / med(a) if a and b else float("nan")))
EOF
