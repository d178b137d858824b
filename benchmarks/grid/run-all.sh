#!/bin/sh
# run-all.sh runs the whole grid of the current recipe (v3) in the background until it is done
# or stopped:
#
#	nohup benchmarks/grid/run-all.sh > grid.log 2>&1 &
#
# It builds cmd/bench and runs the whole grid in one command, wave by wave (grid.Wave): the
# cells a previous run stopped mid-way and the papers' rows (the recipe's First: their
# learning-rate sweeps, then every seed, variant and fine-tune), then the rest. A cell whose
# learning rate waits on a sweep runs in a later wave. The command skips the finished cells
# (their results are in benchmarks/results, committed). Checkpoints go to $WEIGHTS (default weights/grid, ignored by git;
# the shipped models to weights/bench) every 200 steps, so a cell that is cut off resumes from its
# last checkpoint on the next run: the grid runs until it is stopped, and a core is never left
# idle for want of a cell that would finish in time.
#
# END=17:00 (optional) starts no cell that its estimate says would end after 17:00: for a
# machine whose $WEIGHTS will not outlive it, where a cut-off cell's work would be lost. A time
# of day already past means tomorrow's.
set -e
cd "$(dirname "$0")/../.."
WEIGHTS=${WEIGHTS:-weights/grid}
within=0
if [ -n "${END:-}" ]; then
	end=$(date -d "$END" +%s)
	[ "$end" -gt "$(date +%s)" ] || end=$((end + 86400))
	within=$((end - $(date +%s)))s
fi
go build -o "${TMPDIR:-/tmp}/posformer-grid-bench" ./cmd/bench
nice -n 19 "${TMPDIR:-/tmp}/posformer-grid-bench" --full -jobs 2 -weights "$WEIGHTS" -within "$within" -task copy,reverse,passkey,mqar,lm,mlm
