// Package benchmarks holds posformer's measurements: the extrapolation benchmark's training
// recipe (benchmarks/recipe; its corpus and tasks are engine/train's), evaluation (benchmarks/eval), statistics (benchmarks/stats),
// report (benchmarks/report), full-grid runner (benchmarks/grid) and figures (benchmarks/plot);
// the speed benchmark (benchmarks/speed: load, first token, prefill, decode, batches, memory);
// and Go benchmarks of the shipped models' speed. Figures, with the commands that produced
// them, are recorded in benchmarks/README.md.
package benchmarks
