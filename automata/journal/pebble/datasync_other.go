//go:build !linux

package pebble

import "os"

// datasync flushes f's data to stable storage.
func datasync(f *os.File) error { return f.Sync() }
