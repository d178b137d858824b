// Package benchmarks holds posformer's measurements: the corpus of Go source the toy models
// train on (benchmarks/corpus); the extrapolation benchmark's tasks (benchmarks/tasks), training
// recipe (benchmarks/recipe), evaluation (benchmarks/eval), statistics (benchmarks/stats),
// report (benchmarks/report), full-grid runner (benchmarks/grid) and figures (benchmarks/plot);
// the speed benchmark (benchmarks/speed: load, first token, prefill, decode, batches, memory);
// and Go benchmarks of the shipped models' speed. Figures, with the commands that produced
// them, are recorded in benchmarks/README.md.
package benchmarks
