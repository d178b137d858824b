// Command bench runs posformer's benchmarks. -speed measures inference speed (speed.go); the
// extrapolation benchmark is not built yet.
//
//	go run ./cmd/bench -speed
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-speed" || os.Args[1] == "--speed") {
		if err := runSpeed(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	fmt.Fprintln(os.Stderr, "bench: extrapolation benchmark: not built yet; use -speed")
	os.Exit(2)
}
