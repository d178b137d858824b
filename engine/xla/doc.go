//go:build !cgo || noxla

// Package xla adds GoMLX's XLA backend to engine.NewBackend when built with cgo; this build
// (without cgo, or with the tag noxla) has none, and "xla:cpu" answers so.
package xla
