// Command bench runs posformer's benchmarks. -speed measures inference speed (speed.go),
// -make-llama2c writes a random llama2.c checkpoint (llama2c.go); the extrapolation benchmark
// is not built yet.
//
//	go run ./cmd/bench -speed
//	go run ./cmd/bench -make-llama2c -o rand15M.bin
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 {
		var run func([]string) error
		switch os.Args[1] {
		case "-speed", "--speed":
			run = runSpeed
		case "-make-llama2c", "--make-llama2c":
			run = runMakeLlama2c
		}
		if run != nil {
			if err := run(os.Args[2:]); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintln(os.Stderr, "bench: extrapolation benchmark: not built yet; use -speed or -make-llama2c")
	os.Exit(2)
}
