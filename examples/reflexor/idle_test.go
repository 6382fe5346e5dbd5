//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/examples/internal/longrun"
)

// BenchmarkIdleConnections holds 10,000 state streams open on one Reflexor,
// a child process, as pages that follow it and do nothing else (raw TCP
// connections from 200 addresses, whose bytes one goroutine reads every
// 100 ms), and posts 200 messages while they are open; then it closes them
// and waits for the server's memory to settle (at most 150 s). It does that
// twice, and reports the second burst: the POSTs' latency (p50, p99, max),
// the server's resident memory per connection, and its resident memory
// before the burst, while the connections are open, and after they close —
// and, as "initial", before the first burst: what the Go runtime keeps of a
// first burst for good (the poll descriptors of its sockets, some 600
// bytes each, which later connections reuse) is in the second's "before".
//
//	go test -run XXX -bench IdleConnections -benchtime 1x ./examples/reflexor/
func BenchmarkIdleConnections(b *testing.B) {
	const conns, posts = 10_000, 200
	for range b.N {
		s := startService(b, "-delay", "0")
		pid := strconv.Itoa(s.cmd.Process.Pid)
		rss := func() int64 { return longrun.ProcStatus(b, pid, "VmRSS") }
		request := fmt.Sprintf("GET /agent/state HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", s.addr, s.token)
		head := make([]byte, 512)
		var open []net.Conn
		closeAll := func() {
			for _, c := range open {
				c.Close()
			}
			open = open[:0]
		}
		defer closeAll()
		// connect opens n streams, from 200 loopback addresses, as from 200
		// machines: 50 streams each of 10,000, under the bridge's limit
		// per client.
		connect := func(n int) {
			for i := range n {
				from := &net.TCPAddr{IP: net.IPv4(127, 0, 1+byte(i%200/100), 1+byte(i%100))}
				c, err := (&net.Dialer{LocalAddr: from}).Dial("tcp", s.addr)
				if err != nil {
					b.Fatalf("connection %d: %v", len(open)+1, err)
				}
				open = append(open, c)
				c.SetDeadline(time.Now().Add(hangGuard))
				if _, err := io.WriteString(c, request); err != nil {
					b.Fatal(err)
				}
				got, err := c.Read(head)
				if err != nil || !bytes.HasPrefix(head[:got], []byte("HTTP/1.1 200")) {
					b.Fatalf("connection %d: %q %v", len(open), head[:got], err)
				}
				c.SetDeadline(time.Time{})
			}
		}
		type burstResult struct {
			before, open, openAnon, after int64
			took                          []time.Duration
			settle                        time.Duration
		}
		burst := func(round int) burstResult {
			r := burstResult{before: rss()}
			connect(conns)
			stopReading := readAll(b, open)
			time.Sleep(2 * time.Second)
			r.open, r.openAnon = rss(), longrun.ProcStatus(b, pid, "RssAnon")
			for i := range posts {
				start := time.Now()
				postUserMessage(b, "http://"+s.addr+"/agent", s.token, fmt.Sprintf("p%d-%d", round, i), "hello again")
				r.took = append(r.took, time.Since(start))
			}
			slices.Sort(r.took)
			stopReading()
			closeAll()
			start := time.Now()
			for r.after = rss(); r.after > r.before*11/10 && time.Since(start) < 150*time.Second; r.after = rss() {
				time.Sleep(time.Second)
			}
			r.settle = time.Since(start)
			return r
		}
		// Warm up: the server has run every path once (streams opened,
		// updated and closed, messages answered) before it is measured.
		connect(100)
		postUserMessage(b, "http://"+s.addr+"/agent", s.token, "w-1", "hello")
		closeAll()
		time.Sleep(3 * time.Second) // the reply, the sweep, and the heap settle
		initial := rss()
		burst(1)
		r := burst(2)

		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		mib := func(n int64) float64 { return float64(n) / (1 << 20) }
		b.ReportMetric(ms(r.took[len(r.took)/2]), "p50-ms")
		b.ReportMetric(ms(r.took[len(r.took)*99/100]), "p99-ms")
		b.ReportMetric(ms(r.took[len(r.took)-1]), "max-ms")
		b.ReportMetric(float64(r.open-r.before)/conns/1024, "KiB/conn")
		b.ReportMetric(mib(initial), "rss-initial-MiB")
		b.ReportMetric(mib(r.before), "rss-before-MiB")
		b.ReportMetric(mib(r.open), "rss-open-MiB")
		b.ReportMetric(mib(r.openAnon), "anon-open-MiB")
		b.ReportMetric(mib(r.after), "rss-after-MiB")
		b.ReportMetric(float64(r.after)/float64(r.before), "after/before")
		b.ReportMetric(float64(r.after)/float64(initial), "after/initial")
		b.ReportMetric(r.settle.Seconds(), "settle-s")
	}
}

// readAll reads what has come on each connection, every 100 ms, from one
// goroutine, without waiting on any, until stop is called.
func readAll(tb testing.TB, conns []net.Conn) (stop func()) {
	raws := make([]syscall.RawConn, len(conns))
	for i, c := range conns {
		raw, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			tb.Fatal(err)
		}
		raws[i] = raw
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		buf := make([]byte, 64<<10)
		for {
			for _, raw := range raws {
				raw.Read(func(fd uintptr) bool {
					for {
						n, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_DONTWAIT)
						if n <= 0 || err != nil {
							return true
						}
					}
				})
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-stopped }
}
