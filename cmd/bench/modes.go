package main

// The speed benchmark (speed.go) and the random llama2.c checkpoint generator (llama2c.go) are
// modes of their own, each with its own flags.
func init() {
	modes["speed"] = runSpeed
	modes["make-llama2c"] = runMakeLlama2c
}
