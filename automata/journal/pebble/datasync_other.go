//go:build !linux

package pebble

import "os"

// datasync flushes f's data to stable storage. (A variable: tests make it
// fail.)
var datasync = func(f *os.File) error { return f.Sync() }
