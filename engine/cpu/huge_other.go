//go:build !linux

package cpu

func hugePages(b []byte) {}
