//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package httpbridge

import "syscall"

// canWriteNow says whether writeNow and peerClosed work on this system:
// here they do not, and the hub writes every client from a goroutine that
// may wait.
const canWriteNow = false

func writeNow(raw syscall.RawConn, bufs [][]byte) (int, error) { return 0, nil }

func peerClosed(raw syscall.RawConn) bool { return false }
