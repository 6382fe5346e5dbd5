//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package httpbridge

import "syscall"

// canWriteNow says whether writeNow and peerClosed work on this system.
const canWriteNow = true

// writeNow writes as much of p to the socket as it takes without waiting,
// and returns how much that was: the socket is non-blocking (the runtime's
// poller set it so), and a full one answers EAGAIN. A nil raw takes
// nothing.
func writeNow(raw syscall.RawConn, p []byte) (n int, err error) {
	if raw == nil {
		return 0, nil
	}
	cerr := raw.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, e := syscall.Write(int(fd), p[n:])
			if m > 0 {
				n += m
			}
			switch {
			case e == syscall.EINTR:
			case e == syscall.EAGAIN:
				return true // full: the rest waits for a goroutine
			case e != nil:
				err = e
				return true
			case m <= 0:
				return true
			}
		}
		return true // done: never wait for the poller here
	})
	if err == nil {
		err = cerr
	}
	return n, err
}

// peerClosed says, without waiting, whether the other end of the socket
// has closed it (or it failed): a peek reads end of file or an error.
// Bytes a client sent after its request are left where they are.
func peerClosed(raw syscall.RawConn) bool {
	closed := false
	cerr := raw.Read(func(fd uintptr) bool {
		var b [1]byte
		for {
			n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
			case err != nil, n == 0:
				closed = true
			}
			return true
		}
	})
	return closed || cerr != nil
}
