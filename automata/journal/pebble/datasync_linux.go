package pebble

import (
	"os"
	"syscall"
)

// datasync flushes f's data, and only the metadata needed to read it back:
// the append log's blocks are allocated, so none. (A variable: tests make
// it fail.)
var datasync = func(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
