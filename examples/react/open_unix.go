//go:build unix

package main

import "syscall"

// openNonblock opens a FIFO without waiting for a writer to open it too
// (readConfigFile then refuses it); a regular file reads as it would
// without it.
const openNonblock = syscall.O_NONBLOCK
