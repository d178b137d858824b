#!/usr/bin/env bash
# Decode speed of two posformer builds against llama.cpp and against the memory-bandwidth bound,
# in one run on one machine: the check that a change kept decoding's pace. The engines alternate
# within each repetition, so a load that comes and goes touches all of them alike.
#
#   BEFORE=/tmp/infer-old AFTER=/tmp/infer-new PEERS=/tmp/peers REPO=$PWD \
#     bash benchmarks/peers/before_after.sh
#
# PEERS holds llamacpp_decode and node_modules/ (README.md here) and the GGUF files
# r15M-{f32,q8_0}.gguf and r110M-{f32,q8_0}.gguf: random llama2.c models of the 15M shape
# (-dim 288 -hidden 768 -layers 6 -heads 6 -vocab 32000 -seq 256) and the 110M shape (-dim 768
# -hidden 2048 -layers 12 -heads 12 -vocab 32000 -seq 1024), and for MODELS=42M r42M-*.gguf of
# the shape between (-dim 512 -hidden 1376 -layers 8 -heads 8 -vocab 32000 -seq 1024), written by go run ./cmd/bench
# -make-llama2c and exported with go run ./cmd/export --type f32|q8_0|q4_0. REPS (5) sets the
# repetitions, MODELS ("15M 110M") the shapes, TYPES ("f32 q8_0") the weights, THREADS (2) the
# threads of every engine, STEPS the tokens generated (default 256 for 15M, 128 for 110M).
# BEFORE_ARGS and AFTER_ARGS are flags added to each build's command (the same binary twice with
# AFTER_ARGS="-ctk f16 -ctv f16" compares a float32 and a float16 KV cache), and KV_BYTES (4)
# the bytes of a cached key or value in the bound (2 for a half cache; llama.cpp keeps f16).
# PAUSE_PATTERN, a pgrep -f pattern, names background jobs stopped while anything is timed
# (pause.sh) and resumed after, also when the script is interrupted.
#
# The bound: a token reads every weight once (the file's bytes: the tied embedding is read whole
# as the output head, one row of it as the input) and the KV cache so far (K and V, KV_BYTES
# each, of every layer: on average half of the steps' positions), so no engine decodes faster than
# bandwidth ÷ those bytes. The bandwidth is BenchmarkReadBandwidth's (float32 dot products over a
# 512 MB matrix on THREADS threads), the best of five runs of 2 s, taken in the same run.
set -u
PEERS=${PEERS:?set PEERS to the directory of the peers}
BEFORE=${BEFORE:?set BEFORE to the infer binary of the old build}
AFTER=${AFTER:?set AFTER to the infer binary of the new build}
REPS=${REPS:-5}
MODELS=${MODELS:-15M 110M}
TYPES=${TYPES:-f32 q8_0}
THREADS=${THREADS:-2}
BEFORE_ARGS=${BEFORE_ARGS:-}
AFTER_ARGS=${AFTER_ARGS:-}
KV_BYTES=${KV_BYTES:-4}
REPO=${REPO:-$PWD}
PAUSE_PATTERN=${PAUSE_PATTERN:-grid-bench --full}
. "$(dirname "$0")/pause.sh"
trap resume EXIT
trap 'exit 130' INT TERM
export LLAMACPP_LIB_DIR=${LLAMACPP_LIB_DIR:-$PEERS/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}
cd "$PEERS"
# run CMD...: the command's stderr, with the background jobs stopped only while it runs.
run() {
	pause
	"$@" 2>&1 >/dev/null
	resume
}
# The read bandwidth in GB/s on THREADS threads: the best of five.
(cd "$REPO" && go test -c -o "$PEERS/kernels.test" ./engine/cpu/kernels) || exit 1
pause
GBS=$("$PEERS/kernels.test" -test.run '^$' -test.bench "ReadBandwidth/threads=$THREADS\$" -test.benchtime 2s -test.count 5 | grep -o "[0-9.]* GB/s" | sort -g | tail -1 | cut -d' ' -f1)
resume
rate() { run "$@" | grep -o "achieved tok/s: [0-9.]*\|decode [0-9.]* tok/s" | grep -o "[0-9][0-9.]*" | head -1; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else printf "%.1f (%.1f-%.1f)\n", a[int((NR+1)/2)], a[1], a[NR]}'; }
middle() { median | cut -d' ' -f1; } # the median alone
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC') · cpu: $(lscpu | sed -n 's/^Model name: *//p') · $(nproc) vCPUs · $THREADS threads · load: $(cut -d' ' -f1-3 /proc/loadavg) · read bandwidth $GBS GB/s"
echo
echo "| model, weights ($THREADS threads, greedy from BOS) | steps | bound tok/s | llama.cpp tok/s | posformer before | posformer after | after ÷ before | after ÷ llama.cpp | after ÷ bound |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for m in $MODELS; do
	n=256 layers=6 dim=288
	[ $m = 42M ] && n=128 layers=8 dim=512
	[ $m = 110M ] && n=128 layers=12 dim=768
	n=${STEPS:-$n}
	for q in $TYPES; do
		f=r$m-$q.gguf
		bound=$(awk -v gbs="$GBS" -v w="$(stat -L -c %s "$f")" -v kv="$((2 * layers * dim * KV_BYTES * n / 2))" 'BEGIN {printf "%.1f", gbs * 1e9 / (w + kv)}')
		l=() b=() a=()
		for _ in $(seq "$REPS"); do
			l+=("$(rate ./llamacpp_decode "$f" "$n" "$THREADS")")
			# shellcheck disable=SC2086 # the extra flags split on spaces
			b+=("$(rate "$BEFORE" -m "$f" --temp 0 --ignore-eos -n "$n" -p "" --backend cpu:threads="$THREADS" $BEFORE_ARGS)")
			# shellcheck disable=SC2086
			a+=("$(rate "$AFTER" -m "$f" --temp 0 --ignore-eos -n "$n" -p "" --backend cpu:threads="$THREADS" $AFTER_ARGS)")
		done
		mb=$(printf '%s\n' "${b[@]}" | grep . | middle)
		ma=$(printf '%s\n' "${a[@]}" | grep . | middle)
		ml=$(printf '%s\n' "${l[@]}" | grep . | middle)
		echo "| $m ${q^^} | $n | $bound | $(printf '%s\n' "${l[@]}" | grep . | median) | $(printf '%s\n' "${b[@]}" | grep . | median) | $(printf '%s\n' "${a[@]}" | grep . | median) | $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.2f", a/b}') | $(awk -v a="$ma" -v b="$ml" 'BEGIN {printf "%.2f", a/b}') | $(awk -v a="$ma" -v b="$bound" 'BEGIN {printf "%.2f", a/b}') |"
	done
done
