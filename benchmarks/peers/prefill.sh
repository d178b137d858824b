#!/usr/bin/env bash
# Prefill speed of two posformer builds against llama.cpp, in one run on one machine: a prompt
# of P tokens fed in one call (llama.cpp: one llama_decode of P tokens; posformer: one
# Session.Append of P ids). The engines alternate within each repetition, as in
# before_after.sh.
#
#   BEFORE=<old posformer> AFTER=<new posformer> PEERS=<peers dir> bash benchmarks/peers/prefill.sh
#
# BEFORE and AFTER are builds of ./cmd/posformer. Each engine is timed on its second prefill of
# the prompt in one process (WARM=1, the default), as llama-bench times after a warm-up: the
# first prefill touches freshly allocated buffers (and, in posformer, compiles the prompt's
# graph), a cost paid once per process. With WARM=0 both are timed on their first prefill
# instead (posformer's graph compilation still left out): llama.cpp's client prints both rates,
# posformer's are `posformer bench -speed -reps 2` (the faster of its two prefills, the first
# including compilation) and `posformer run` (its first).
#
# PEERS holds llamacpp_decode (built with --prompt support) and the GGUF files
# r{15M,110M}-{f32,q8_0,q4_0}.gguf (before_after.sh says how to make them). REPS (5),
# MODELS ("15M 110M"), TYPES ("f32 q8_0"), PROMPTS ("128 512") and THREADS (2) choose the rows.
# PAUSE_PATTERN, a pgrep -f pattern, names background jobs stopped while anything is timed
# (pause.sh) and resumed after, also when the script is interrupted.
set -u
PEERS=${PEERS:?set PEERS to the directory of the peers}
BEFORE=${BEFORE:?set BEFORE to the posformer binary of the old build}
AFTER=${AFTER:?set AFTER to the posformer binary of the new build}
WARM=${WARM:-1}
REPS=${REPS:-5}
MODELS=${MODELS:-15M 110M}
TYPES=${TYPES:-f32 q8_0}
PROMPTS=${PROMPTS:-128 512}
THREADS=${THREADS:-2}
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
# llama.cpp's client prints "first prefill tok/s" (cold) then "prefill tok/s" (warm).
llama() {
	local which="prefill"
	[ "$WARM" = 1 ] || which="first prefill"
	run ./llamacpp_decode "$@" | grep -o "^$which tok/s: [0-9.]*" | grep -o "[0-9][0-9.]*$" | head -1
}
# posformer BINARY MODEL PROMPT: the rate of its warm (bench -speed's prefill table) or its
# first (run's report) prefill.
posformer() {
	if [ "$WARM" = 1 ]; then
		pause
		"$1" bench -speed -m "$2" -c 1024 -prompts "$3" -reps 2 -n 1 -batches 1 --backend cpu:threads="$THREADS" 2>/dev/null |
			sed -n '/^| prefill tok\/s/,/^$/p' | sed -n 3p | awk -F'|' '{gsub(/ /, "", $3); print $3}'
		resume
	else
		run "$1" run -m "$2" -c 1024 --temp 0 --ignore-eos -n 1 --prompt-ids "$(seq -s, 100 $((100 + $3 - 2)))" --backend cpu:threads="$THREADS" |
			grep -o "prefill [0-9.]* tok/s" | grep -o "[0-9][0-9.]*" | head -1
	fi
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else printf "%.1f (%.1f-%.1f)\n", a[int((NR+1)/2)], a[1], a[NR]}'; }
middle() { median | cut -d' ' -f1; }
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC') · $([ "$WARM" = 1 ] && echo "second (warm) prefill" || echo "first (cold) prefill") · cpu: $(lscpu | sed -n 's/^Model name: *//p') · $(nproc) vCPUs · $THREADS threads · load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| model, weights, prompt | llama.cpp tok/s | posformer before | posformer after | after ÷ before | after ÷ llama.cpp |"
echo "| --- | --- | --- | --- | --- | --- |"
for m in $MODELS; do
	for q in $TYPES; do
		for p in $PROMPTS; do
			f=r$m-$q.gguf
			l=() b=() a=()
			for _ in $(seq "$REPS"); do
				l+=("$(llama "$f" 1 "$THREADS" --prompt "$p")")
				b+=("$(posformer "$BEFORE" "$f" "$p")")
				a+=("$(posformer "$AFTER" "$f" "$p")")
			done
			ml=$(printf '%s\n' "${l[@]}" | grep . | middle)
			mb=$(printf '%s\n' "${b[@]}" | grep . | middle)
			ma=$(printf '%s\n' "${a[@]}" | grep . | middle)
			echo "| $m ${q^^}, $p | $(printf '%s\n' "${l[@]}" | grep . | median) | $(printf '%s\n' "${b[@]}" | grep . | median) | $(printf '%s\n' "${a[@]}" | grep . | median) | $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.2f", a/b}') | $(awk -v a="$ma" -v b="$ml" 'BEGIN {printf "%.2f", a/b}') |"
		done
	done
done
