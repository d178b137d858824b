//go:build !linux

package cpu

func hugePages(b []byte) {}

func hugePagesAround(b []byte) bool { return false }
