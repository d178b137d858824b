#!/usr/bin/env bash
# Decode speed of two posformer builds against llama.cpp, in one run on one machine: the check
# that a change kept decoding's pace. The engines alternate within each repetition, so a load
# that comes and goes touches all of them alike.
#
#   BEFORE=/tmp/infer-old AFTER=/tmp/infer-new PEERS=/tmp/peers bash benchmarks/peers/before_after.sh
#
# PEERS holds llamacpp_decode and node_modules/ (README.md here) and the GGUF files
# r15M-{f32,q8_0}.gguf and r110M-{f32,q8_0}.gguf: random llama2.c models of the 15M shape
# (-dim 288 -hidden 768 -layers 6 -heads 6 -vocab 32000 -seq 256) and the 110M shape (-dim 768
# -hidden 2048 -layers 12 -heads 12 -vocab 32000 -seq 1024) written by go run ./cmd/bench
# -make-llama2c and exported with go run ./cmd/export --type f32|q8_0|q4_0. REPS (5) sets the
# repetitions, MODELS ("15M 110M") the shapes, TYPES ("f32 q8_0") the weights, THREADS (2) the
# threads of every engine. PAUSE=PID stops that process (a background job) while the engines
# run and resumes it after, also when the script is interrupted.
set -u
PEERS=${PEERS:?set PEERS to the directory of the peers}
BEFORE=${BEFORE:?set BEFORE to the infer binary of the old build}
AFTER=${AFTER:?set AFTER to the infer binary of the new build}
REPS=${REPS:-5}
MODELS=${MODELS:-15M 110M}
TYPES=${TYPES:-f32 q8_0}
THREADS=${THREADS:-2}
PAUSE=${PAUSE:-}
if [ -n "$PAUSE" ]; then
	trap 'kill -CONT "$PAUSE" 2>/dev/null' EXIT INT TERM
fi
export LLAMACPP_LIB_DIR=${LLAMACPP_LIB_DIR:-$PEERS/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}
cd "$PEERS"
# run CMD...: the command's stderr, with the paused job stopped only while it runs.
run() {
	[ -n "$PAUSE" ] && kill -STOP "$PAUSE" 2>/dev/null
	"$@" 2>&1 >/dev/null
	[ -n "$PAUSE" ] && kill -CONT "$PAUSE" 2>/dev/null
}
rate() { run "$@" | grep -o "achieved tok/s: [0-9.]*\|decode [0-9.]* tok/s" | grep -o "[0-9][0-9.]*" | head -1; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else printf "%.1f (%.1f-%.1f)\n", a[int((NR+1)/2)], a[1], a[NR]}'; }
middle() { median | cut -d' ' -f1; } # the median alone
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC') · cpu: $(lscpu | sed -n 's/^Model name: *//p') · $(nproc) vCPUs · $THREADS threads · load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| model, weights ($THREADS threads, greedy from BOS) | steps | llama.cpp tok/s | posformer before | posformer after | after ÷ before |"
echo "| --- | --- | --- | --- | --- | --- |"
for m in $MODELS; do
	n=256
	[ $m = 110M ] && n=128
	for q in $TYPES; do
		f=r$m-$q.gguf
		l=() b=() a=()
		for _ in $(seq "$REPS"); do
			l+=("$(rate ./llamacpp_decode "$f" "$n" "$THREADS")")
			b+=("$(rate "$BEFORE" -m "$f" --temp 0 --ignore-eos -n "$n" -p "" --backend cpu:threads="$THREADS")")
			a+=("$(rate "$AFTER" -m "$f" --temp 0 --ignore-eos -n "$n" -p "" --backend cpu:threads="$THREADS")")
		done
		mb=$(printf '%s\n' "${b[@]}" | grep . | middle)
		ma=$(printf '%s\n' "${a[@]}" | grep . | middle)
		echo "| $m ${q^^} | $n | $(printf '%s\n' "${l[@]}" | grep . | median) | $(printf '%s\n' "${b[@]}" | grep . | median) | $(printf '%s\n' "${a[@]}" | grep . | median) | $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.2f", a/b}') |"
	done
done
