//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package httpbridge

import "syscall"

// canWriteNow says whether writeNow and peerClosed work on this system.
const canWriteNow = true

// writeNow writes as much of bufs, in order, to the socket as it takes
// without waiting, and returns how much that was: the socket is
// non-blocking (the runtime's poller made it so), and a full one answers
// EAGAIN. A nil raw takes nothing.
func writeNow(raw syscall.RawConn, bufs [][]byte) (n int, err error) {
	if raw == nil {
		return 0, nil
	}
	cerr := raw.Write(func(fd uintptr) bool {
		for _, p := range bufs {
			for len(p) > 0 {
				m, e := syscall.Write(int(fd), p)
				if m > 0 {
					n += m
					p = p[m:]
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
		}
		return true // done: never wait for the poller here
	})
	if err == nil {
		err = cerr
	}
	return n, err
}

// peerClosed says, without waiting, whether the other end of the socket
// has closed it (or it failed): reading it gives end of file or an error.
// What a client sends after its request is read and dropped: nothing reads
// a stream's connection once the hub has it, and bytes left unread would
// hide the end of file behind them.
func peerClosed(raw syscall.RawConn) bool {
	closed := false
	cerr := raw.Read(func(fd uintptr) bool {
		var buf [512]byte
		for range 128 { // 64 KiB a sweep at most
			n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_DONTWAIT)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return true
			case err != nil, n == 0:
				closed = true
				return true
			}
		}
		return true
	})
	return closed || cerr != nil
}
