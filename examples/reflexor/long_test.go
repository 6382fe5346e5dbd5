package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/agents/reflexor"
	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/examples/internal/httprun"
	"github.com/moora-go/moora/examples/internal/longrun"
)

// longConversation is a Reflexor served on loopback, as main serves it (a
// bbolt journal, the offline brain with no delay, reflexor.New's handler),
// that a test or a benchmark talks to as pages do.
type longConversation struct {
	base, token string
	dir         string
	store       *bolt.Store
	agent       *reflexor.Agent
	idle        chan int // the number of user messages, each time the agent is idle
	stop        func()
}

func startLongConversation(tb testing.TB) *longConversation {
	tb.Helper()
	dir := tb.TempDir()
	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tools, err := Tools(time.Now, 0)
	if err != nil {
		store.Close()
		tb.Fatal(err)
	}
	c := &longConversation{dir: dir, store: store, token: "long-conversation", idle: make(chan int, 1)}
	a, err := reflexor.New(reflexor.Config{Model: ScriptedBrain(0), System: defaultSystem, Tools: tools, CompressAfter: 8, Store: store, Token: c.token})
	if err != nil {
		tb.Fatal(err)
	}
	c.agent = a
	a.Machine().Subscribe(func(s decl.AgentState) {
		if reflexor.Idle(s) {
			select {
			case <-c.idle:
			default:
			}
			c.idle <- len(s.UserMessages)
		}
	})
	srv := newServer(a.Handler())
	srv.RegisterOnShutdown(a.CloseStreams)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	c.base = "http://" + l.Addr().String() + "/agent"
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- httprun.Until(ctx, srv, l) }()
	c.stop = sync.OnceFunc(func() {
		cancel()
		<-served
		a.Close(context.Background())
	})
	tb.Cleanup(c.stop)
	return c
}

// say posts the user's n-th message and waits until the agent is idle
// again, with the reply written.
func (c *longConversation) say(tb testing.TB, n int, content string) {
	tb.Helper()
	postUserMessage(tb, c.base, c.token, fmt.Sprint("u-", n), content)
	timeout := time.After(hangGuard)
	for {
		select {
		case users := <-c.idle:
			if users >= n {
				return
			}
		case <-timeout:
			tb.Fatalf("hung: message %d was never answered", n)
		}
	}
}

// follow opens the state stream as a page does; a reader that reads drains
// it until the conversation stops, one that does not leaves every byte in
// its socket.
func (c *longConversation) follow(tb testing.TB, read bool) {
	tb.Helper()
	req, err := http.NewRequest("GET", c.base+"/state", nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	if resp.StatusCode != 200 {
		tb.Fatalf("GET /state: %d", resp.StatusCode)
	}
	tb.Cleanup(func() { resp.Body.Close() })
	if read {
		go io.Copy(io.Discard, bufio.NewReader(resp.Body))
	}
}

// TestCostFollowsTheMessage: what the journal keeps per user message —
// the message, and what the brain writes for it (its reply, the summaries
// it compresses the history into) — does not grow with the conversation,
// whether the messages are words or one long token. The offline brain
// quoted a long token whole in its reply and in every summary after it,
// which made each message cost more than the one before.
func TestCostFollowsTheMessage(t *testing.T) {
	const messages, size = 40, 20_000
	for _, words := range []bool{true, false} {
		t.Run(fmt.Sprintf("words=%v", words), func(t *testing.T) {
			c := startLongConversation(t)
			grew := make([]int64, messages+1) // the journal's growth per message
			last := int64(0)
			for n := 1; n <= messages; n++ {
				c.say(t, n, longrun.Message(n, size, words))
				j, _, err := c.store.Size()
				if err != nil {
					t.Fatal(err)
				}
				grew[n], last = j-last, j
			}
			var first, final int64
			for n := 1; n <= 10; n++ {
				first += grew[n]
				final += grew[messages-10+n]
			}
			t.Logf("journal bytes for messages 1-10: %d; %d-%d: %d", first, messages-9, messages, final)
			if final > first*3/2 {
				t.Errorf("the last 10 messages took %d bytes of journal, the first 10 %d: what a message costs grows with the conversation", final, first)
			}
			if s := c.agent.Machine().Current(); s.ContextSummary == "" || len(s.ContextSummary) > maxSummary {
				t.Errorf("the summary is %d bytes, want 1 to %d", len(s.ContextSummary), maxSummary)
			}
		})
	}
}

// BenchmarkLongConversation is a conversation of 1,000 user messages of
// 60 KB each, over HTTP, with one page following the state stream and 20
// that never read it: each message is posted and waited for until the agent
// is idle again (the offline brain has answered, compressing the history
// every 8 messages). It reports the time of the last 10 messages over that of
// messages 1 to 10 (the ratio the cost of an input grows by over the
// conversation), the resident memory at the end, and the journal's size.
//
//	go test -run XXX -bench LongConversation -benchtime 1x ./examples/reflexor/
func BenchmarkLongConversation(b *testing.B) {
	const messages, size, stalled = 1000, 60_000, 20
	for _, words := range []bool{true, false} {
		name := "one-token"
		if words {
			name = "words"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				c := startLongConversation(b)
				c.follow(b, true)
				for range stalled {
					c.follow(b, false)
				}
				startRSS := longrun.ProcStatus(b, "self", "VmRSS")
				took := make([]time.Duration, messages+1)
				for n := 1; n <= messages; n++ {
					msg := longrun.Message(n, size, words)
					start := time.Now()
					c.say(b, n, msg)
					took[n] = time.Since(start)
				}
				b.ReportMetric(float64(longrun.ProcStatus(b, "self", "RssAnon"))/(1<<20), "anon-MiB")
				b.ReportMetric(float64(longrun.ProcStatus(b, "self", "RssFile"))/(1<<20), "filerss-MiB")
				end := longrun.Measure(b)
				c.stop()
				path := filepath.Join(c.dir, "agent.db")
				longrun.Report(b, took[1:11], took[messages-9:], startRSS, end, path)
				info, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(info.Size())/(1<<20), "file-MiB")
			}
		})
	}
}

// postUserMessage posts a user message to the bridge at base and waits for
// the answer (not for the reply).
func postUserMessage(tb testing.TB, base, token, id, content string) {
	tb.Helper()
	body := fmt.Sprintf(`{"type":"user-send-message","messageId":%q,"content":%q}`, id, content)
	req, err := http.NewRequest("POST", base+"/inputs", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		tb.Fatalf("POST of %s: %d %s", id, resp.StatusCode, answer)
	}
}
