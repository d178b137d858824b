#!/usr/bin/env bash
# Trains one toy decoder (and encoder, where the scheme applies) per positional scheme, all
# alike, and prints a Markdown table of final eval loss against the unigram baseline.
#
#   benchmarks/schemes/train.sh [OUT_DIR] [SCHEME...]     (default: every scheme, into /tmp/posformer-schemes)
#
# A decoder run takes about a minute on an idle 2-core machine, an encoder run two and a half. Needs jq for the table.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/posformer-schemes}
shift || true
go build -o "$out/train" ./cmd/train
schemes=("$@")
if [ ${#schemes[@]} -eq 0 ]; then
	schemes=(none sinusoidal learned multiplicative floater rope xpos alibi kerple fire t5 shaw xl deberta)
fi
common=(-dim 64 -layers 2 -heads 4 -kv-heads 2 -hidden 128 -seq 64 -batch 8
	-lr 3e-3 -warmup 50 -eval-every 300 -save-every 1500 -eval-windows 64 -seed 1)
for s in "${schemes[@]}"; do
	for kind in decoder encoder; do
		dir="$out/$s-$kind"
		[ -f "$dir/train.json" ] && continue
		# Masked-byte prediction learns to use positions later than next-byte prediction does.
		extra=(-steps 600)
		[ "$kind" = encoder ] && extra=(-steps 1500)
		[ "$s" = learned ] && extra+=(-pe max_positions=1024)
		# -force: a run that did not finish (no train.json) starts again from scratch.
		if ! "$out/train" -kind "$kind" -scheme "$s" "${extra[@]}" "${common[@]}" -force -o "$dir" 2>"$dir.log"; then
			echo "$s $kind: $(tail -1 "$dir.log")" >&2
		fi
	done
done
echo "| scheme | kind | eval loss (nats/byte) | unigram (nats/byte) | bits/byte | wall s |"
echo "| --- | --- | --- | --- | --- | --- |"
for s in "${schemes[@]}"; do
	for kind in decoder encoder; do
		f="$out/$s-$kind/train.json"
		[ -f "$f" ] || { echo "| $s | $kind | n/a: $(tail -1 "$out/$s-$kind.log" | tr '|' '/') | | | |"; continue; }
		jq -r '"| \(.scheme) | \(.kind) | \(.final_eval_loss*1000|round/1000) | \(.unigram_eval_loss*1000|round/1000) | \(.eval_bits_per_byte*1000|round/1000) | \(.wall_seconds) |"' "$f"
	done
done
