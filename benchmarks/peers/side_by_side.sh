#!/usr/bin/env bash
# Side-by-side decode speed and peak memory: llama2.c's run.c, llama.cpp (through
# llamacpp_decode.c) and posformer, on the same machine in one run, median of 5 (min-max).
#
#   PEERS=/tmp/peers REPO=$PWD bash benchmarks/peers/side_by_side.sh > table.md
#
# PEERS holds what README.md here says how to build: run1 and runomp (run.c built with
# -Ofast -march=native, without and with -fopenmp, its `if (next == 1) break;` removed so that it
# runs every step), llamacpp_decode, node_modules/ (node-llama-cpp), tok512.bin and
# tok32000.bin (llama2.c tokenizers), rand15M.bin (go run ./cmd/bench -make-llama2c -dim 288
# -hidden 768 -layers 6 -heads 6 -kv-heads 6 -vocab 32000 -seq 256 -o rand15M.bin) and the
# GGUF files of both models, written by posformer's exporter and read by both engines:
#   go run ./cmd/export -m stories260K.bin -z tok512.bin -o s260k-f32.gguf --type f32
#   (and --type q8_0, q4_0; rand15M.bin with tok32000.bin as r15m-*.gguf).
# Peak RSS comes from GNU time (apt-get install time). ROWS, a bash regular expression, keeps
# only the rows whose name matches (ROWS='Q8_0|Q4_0' for the quantized ones), so that a run fits
# in a pause of the background grid.
set -u
ROWS=${ROWS:-.}
PEERS=${PEERS:?set PEERS to the directory of the peers}
REPO=${REPO:-$PWD}
S=${S:-$REPO/../shared/fixtures/stories260K.bin}
INFER=${INFER:-/tmp/posformer-infer}
(cd "$REPO" && go build -o "$INFER" ./cmd/infer) || exit 1
export LLAMACPP_LIB_DIR=${LLAMACPP_LIB_DIR:-$PEERS/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}
[ -d "$LLAMACPP_LIB_DIR" ] || { echo "no llama.cpp libraries at $LLAMACPP_LIB_DIR: set LLAMACPP_LIB_DIR" >&2; exit 1; }
cd "$PEERS"

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else print a[int((NR+1)/2)] " (" a[1] "-" a[NR] ")"}'; }
# rate CMD...: tok/s of one run (run.c and llamacpp_decode print "achieved tok/s: X", infer
# "decode X tok/s"), then its peak RSS in MB on a second line.
rate() {
	local out
	out=$(/usr/bin/time -f "RSS %M" "$@" 2>&1 >/dev/null)
	echo "$out" | grep -o "achieved tok/s: [0-9.]*\|decode [0-9.]* tok/s" | grep -o "[0-9][0-9.]*" | head -1
	echo "$out" | grep -o "RSS [0-9]*" | awk '{printf "%.0f\n", $2/1024}'
}
cell() { # cell CMD...: "median tok/s (min-max) · peak RSS MB"
	local rs=() ms=()
	for _ in 1 2 3 4 5; do
		mapfile -t r < <(rate "$@")
		rs+=("${r[0]:-}")
		ms+=("${r[1]:-}")
	done
	echo "$(printf '%s\n' "${rs[@]}" | grep . | median) · $(printf '%s\n' "${ms[@]}" | grep . | median | cut -d' ' -f1) MB"
}
tok() { [ "$1" = s260k ] && echo tok512.bin || echo tok32000.bin; }
bin() { [ "$1" = s260k ] && echo "$S" || echo rand15M.bin; }
steps() { [ "$1" = s260k ] && echo 512 || echo 256; }

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC') · cpu: $(lscpu | sed -n 's/^Model name: *//p') · $(nproc) vCPUs · load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| decode, greedy from BOS: median tok/s of 5 (min-max) · peak RSS | stories260K, 512 steps | 15M shape (dim 288, 6 layers, vocab 32000), 256 steps |"
echo "| --- | --- | --- |"
row() { # row NAME FN: FN MODEL sets CMD, the command line (an array: arguments may be empty)
	local name=$1 fn=$2 a b
	[[ $name =~ $ROWS ]] || return 0
	$fn s260k
	a=$(cell "${CMD[@]}")
	$fn r15m
	b=$(cell "${CMD[@]}")
	echo "| $name | $a | $b |"
}
runc1() { CMD=(./run1 "$(bin $1)" -z "$(tok $1)" -t 0 -n "$(steps $1)"); }
runc2() { CMD=(env OMP_NUM_THREADS=2 ./runomp "$(bin $1)" -z "$(tok $1)" -t 0 -n "$(steps $1)"); }
row "run.c -Ofast -march=native, 1 thread" runc1
row "run.c -Ofast -march=native -fopenmp, 2 threads" runc2
for q in f32 q8_0 q4_0; do
	for t in 1 2; do
		[ "$q" != f32 ] && [ "$t" = 1 ] && continue
		lc() { CMD=(./llamacpp_decode "$1-$q.gguf" "$(steps $1)" "$t"); }
		row "llama.cpp v0.5.0 ${q^^}, $t thread(s), GGUF" lc
	done
done
for q in f32 q8_0 q4_0; do
	pf() { CMD=("$INFER" -m "$1-$q.gguf" --temp 0 --ignore-eos -n "$(steps $1)" -p ""); }
	row "posformer ${q^^} (the same GGUF), cpu, 2 threads" pf
done
# The exact path: float32 activations against the quantized weights (the default quantizes
# decoding's activations to int8 where the CPU has AVX-512 VNNI, as llama.cpp does).
for q in q8_0 q4_0; do
	pa() { CMD=("$INFER" -m "$1-$q.gguf" --temp 0 --ignore-eos -n "$(steps $1)" -p "" --backend cpu:actq8=false); }
	row "posformer ${q^^} (the same GGUF), cpu:actq8=false, 2 threads" pa
done
for w in bf16; do
	pw() { CMD=("$INFER" -m "$(bin $1)" -z "$(tok $1)" --temp 0 --ignore-eos -n "$(steps $1)" --weights $w); }
	row "posformer --weights $w (from the llama2.c file), cpu, 2 threads" pw
done
p2() { CMD=("$INFER" -m "$(bin $1)" -z "$(tok $1)" --temp 0 --ignore-eos -n "$(steps $1)"); }
row "posformer F32 (llama2.c file), cpu, 2 threads" p2
p1() { CMD=("$INFER" -m "$(bin $1)" -z "$(tok $1)" --temp 0 --ignore-eos -n "$(steps $1)" --backend cpu:threads=1); }
row "posformer F32 (llama2.c file), cpu:threads=1" p1
pg() { CMD=("$INFER" -m "$(bin $1)" -z "$(tok $1)" --temp 0 --ignore-eos -n "$(steps $1)" --backend go); }
row "posformer F32 (llama2.c file), go (GoMLX's simplego)" pg
