// Package benchmarks holds posformer's measurements: the corpus of Go source the toy models
// train on (benchmarks/corpus), and Go benchmarks of the shipped models' speed. Figures, with
// the commands that produced them, are recorded in benchmarks/README.md.
package benchmarks
