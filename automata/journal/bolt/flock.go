//go:build !windows && !plan9 && !solaris && !aix && !android

package bolt

import (
	"os"
	"syscall"
	"time"

	berrors "go.etcd.io/bbolt/errors"
)

// lockBoltFile takes the exclusive lock bbolt takes on its file (the same
// flock, on the platforms where bbolt uses flock), before bbolt does, so that
// Open checks a file no other process is writing. bbolt then locks the
// same open file again, which succeeds at once; Close unlocks it.
func lockBoltFile(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EWOULDBLOCK {
			return err
		}
		if time.Now().After(deadline) {
			return berrors.ErrTimeout
		}
		time.Sleep(10 * time.Millisecond)
	}
}
