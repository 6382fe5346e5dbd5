package httpbridge

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
)

// BenchmarkFanOut: 1,000 SSE clients follow one in-memory chat test agent on
// loopback; each iteration dispatches one user message and waits until
// every client has read its delta. It reports the dispatch-to-client latency
// (p50, p99, over every client and iteration) and the memory each
// connection costs (heap and stacks after connecting, over the count; client
// and server are in the same process, so both sides are counted).
func BenchmarkFanOut(b *testing.B) {
	const clients = 1000
	m := agent.Create(decl.EffectFns{})
	defer m.Close(context.Background())
	br, err := New[state, input, view](Memory(m), Config[state, input, view]{
		Decode: decl.DecodeInput, View: userView, Auth: AllowAll,
		MaxStreamsPerClient: clients, // all from one address
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(br)
	defer srv.Close()
	defer br.Close()

	memBefore := memInUse()
	type arrival struct {
		seq uint64
		at  time.Time
	}
	arrivals := make(chan arrival, clients*64)
	var ready sync.WaitGroup
	ready.Add(clients)
	conns := make([]net.Conn, clients)
	for i := range conns {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = c
		fmt.Fprintf(c, "GET /state HTTP/1.1\r\nHost: bench\r\n\r\n")
		go func() {
			r := bufio.NewReaderSize(c, 4096)
			first := true
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				if !bytes.HasPrefix(line, []byte("data: ")) {
					continue
				}
				if first {
					first = false
					ready.Done()
					continue
				}
				i := bytes.Index(line, []byte(`"seq":`))
				j := bytes.IndexByte(line[i+6:], ',')
				seq, _ := strconv.ParseUint(string(line[i+6:i+6+j]), 10, 64)
				arrivals <- arrival{seq, time.Now()}
			}
		}()
	}
	ready.Wait()
	perConn := float64(memInUse()-memBefore) / clients
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	lat := make([]time.Duration, 0, b.N*clients)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		m.DispatchWait(context.Background(), decl.SendUserMessage{ID: fmt.Sprint("m", i), Content: "hello", Timestamp: int64(i)})
		for range clients {
			a := <-arrivals
			if a.seq != uint64(i+1) {
				b.Fatalf("seq %d, want %d", a.seq, i+1)
			}
			lat = append(lat, a.at.Sub(start))
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(perConn/1024, "KiB/conn")
}

func memInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse
}

// BenchmarkBytesPerUpdate: a conversation of 1,000 user messages and 1,000
// replies; for each update, the bytes of the delta event the bridge writes
// against the bytes of a snapshot event of the whole view, as a server that
// sends the full state each time would.
func BenchmarkBytesPerUpdate(b *testing.B) {
	for range b.N {
		m := agent.Create(decl.EffectFns{})
		br, err := New[state, input, view](Memory(m), Config[state, input, view]{Decode: decl.DecodeInput, View: userView, Auth: AllowAll})
		if err != nil {
			b.Fatal(err)
		}
		var deltaBytes, fullBytes, updates int
		for i := range 1000 {
			for _, in := range []input{
				decl.SendUserMessage{ID: fmt.Sprint("u", i), Content: fmt.Sprintf("message number %d from the user", i), Timestamp: int64(2 * i)},
				decl.SendAssiMessage{ID: fmt.Sprint("re-u", i), Content: fmt.Sprintf("the reply to message number %d", i), Timestamp: int64(2*i + 1)},
			} {
				m.DispatchWait(context.Background(), in)
				br.mu.Lock()
				deltaBytes += len(br.ring[len(br.ring)-1].event)
				fullBytes += len(br.snapshotEvent("snapshot", br.seq, br.view))
				br.mu.Unlock()
				updates++
			}
		}
		br.Close()
		m.Close(context.Background())
		b.ReportMetric(float64(deltaBytes)/float64(updates), "delta-B/update")
		b.ReportMetric(float64(fullBytes)/float64(updates), "full-B/update")
		b.ReportMetric(float64(fullBytes)/float64(deltaBytes), "ratio")
	}
}
