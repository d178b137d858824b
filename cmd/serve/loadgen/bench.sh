#!/bin/bash
# The measurements of benchmarks/SERVE.md: cmd/serve on loopback under 1, 4 and 16 streaming
# clients (cmd/serve/loadgen, three repetitions per model), then the decoding step alone
# (BenchmarkDecodeStep). Run from the repository root:
#
#   cmd/serve/loadgen/bench.sh [15M-MODEL [SERVE-FLAGS...]] > serve-bench.txt
#
# 15M-MODEL is a model of the stories15M shape, e.g. random weights written by
# go run ./cmd/bench -make-llama2c -dim 288 -hidden 768 -layers 6 -heads 6 -kv-heads 6
# -vocab 32000 -seq 256 -o rand15M.bin and exported to GGUF (benchmarks/peers/README.md), or
# rand15M.bin itself with SERVE-FLAGS -z TOKENIZER.bin. With PAUSE and RESUME set to commands,
# PAUSE runs first and RESUME on exit (to stop a background job while this measures, about two
# minutes).
set -euo pipefail
big=${1:?give the 15M-shape model as the first argument}
shift || true
port=18200
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/serve" ./cmd/serve
go build -o "$bin/loadgen" ./cmd/serve/loadgen
go test -c -o "$bin/serve.test" ./cmd/serve

if [ -n "${PAUSE:-}" ]; then
  $PAUSE >&2
  trap '${RESUME:-true} >&2; rm -rf "$bin"' EXIT
fi
lscpu | grep 'Model name'
echo "commit $(git rev-parse --short HEAD) · $(uptime)"
for spec in "weights/rope-decoder:8" "$big:4"; do
  rounds=${spec##*:} model=${spec%:*}
  extra=()
  [ "$model" = "$big" ] && extra=("$@")
  "$bin/serve" -m "$model" "${extra[@]}" --port $port --parallel 16 2> "$bin/serve.log" &
  pid=$!
  for _ in $(seq 120); do grep -q listening "$bin/serve.log" && break; sleep 0.5; done
  cat "$bin/serve.log"
  for rep in 1 2 3; do
    echo "rep $rep"
    "$bin/loadgen" -url http://127.0.0.1:$port -clients 1,4,16 -rounds "$rounds" -max-tokens 128 -max-time 60s
  done
  kill -INT $pid
  wait $pid
done
(cd cmd/serve && POSFORMER_SERVE_BENCH_MODEL="$big" "$bin/serve.test" -test.run XXX -test.bench DecodeStep -test.benchtime 100x -test.count 2 | grep Bench | sed 's/^/15M /')
(cd cmd/serve && "$bin/serve.test" -test.run XXX -test.bench DecodeStep -test.benchtime 300x -test.count 3 | grep Bench | sed 's/^/shipped /')
echo "$(uptime)"
