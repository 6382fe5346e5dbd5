//go:build unix

package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock of dir for as long as the returned file
// is open (the kernel drops it when the process dies), or fails when
// another server holds it: nats-server keeps no lock of its own, and two
// servers writing one store would corrupt it.
func lockDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	path := filepath.Join(dir, "moora.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("embedded: %s is in use: another embedded server (in this process or another) keeps its files there", dir)
		}
		return nil, fmt.Errorf("embedded: locking %s: %w", path, err)
	}
	return f, nil
}

// locked reports whether lockDir's lock guards the directory on this
// system.
const locked = true
