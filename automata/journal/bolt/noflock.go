//go:build windows || plan9 || solaris || aix || android

package bolt

import (
	"os"
	"time"
)

// lockBoltFile does nothing where bbolt does not lock with flock: Open
// checks the file before bbolt locks it, so a store that another process is
// writing may be reported as damaged rather than as locked.
func lockBoltFile(f *os.File, timeout time.Duration) error { return nil }
