#!/bin/sh
# sessions.sh runs the v2 grid on a machine that goes away at a known time (a work session):
#
#	END=17:00 nohup benchmarks/grid/sessions.sh > grid.log 2>&1 &
#
# It builds cmd/bench and runs the grid in the order that fills RESULTS.md's findings soonest:
# seed 1 of passkey and mqar (copy and reverse have theirs), lm seed 1, then copy and reverse to
# three seeds (Kazemnejad et al., Ruoss et al.), lm to three (ALiBi, PI, YaRN), then everything.
# Each command skips the finished cells (their results are in benchmarks/v2, committed), and none
# starts a cell that its estimate says would end after END (leave time to commit before the
# machine goes). Checkpoints go to $WEIGHTS (default weights/grid, ignored by git); the shipped
# ones to weights/bench-v2.
set -e
cd "$(dirname "$0")/../.."
END=$(date -d "${END:?set END to when the grid must stop starting cells, e.g. END=17:00}" +%s)
WEIGHTS=${WEIGHTS:-weights/grid}
go build -o "${TMPDIR:-/tmp}/posformer-grid-bench" ./cmd/bench
left() { s=$((END - $(date +%s))); [ "$s" -gt 0 ] || s=1; echo "${s}s"; }
run() { nice -n 19 "${TMPDIR:-/tmp}/posformer-grid-bench" --full -jobs 2 -weights "$WEIGHTS" -within "$(left)" "$@"; }
run -task passkey,mqar -seeds 1
run -task lm -seeds 1
run -task copy,reverse
run -task lm
run -task passkey,mqar
run -task copy,reverse,passkey,mqar,lm,mlm
