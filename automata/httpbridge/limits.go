package httpbridge

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/moora-go/moora/automata/internal/wire"
)

// streamLimits counts the streams (state and token) open at once, in all
// and per client, against Config.MaxStreams and Config.MaxStreamsPerClient.
type streamLimits struct {
	max, perClient int
	mu             sync.Mutex
	open           int
	byClient       map[string]int
}

// limitError is the 503 a stream beyond a limit gets.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// admit takes a place for a stream of client, or says which limit is
// reached. free gives the place back; it may be called more than once.
func (l *streamLimits) admit(client string) (free func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max {
		return nil, &limitError{fmt.Sprintf("%d streams are open, the most this server serves (Config.MaxStreams): try again later", l.open)}
	}
	if l.byClient[client] >= l.perClient {
		return nil, &limitError{fmt.Sprintf("%d streams are open from %s, the most one client may hold (Config.MaxStreamsPerClient)", l.byClient[client], wire.Truncate(client, 100))}
	}
	l.open++
	l.byClient[client]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.open--
			if l.byClient[client]--; l.byClient[client] == 0 {
				delete(l.byClient, client)
			}
		})
	}, nil
}

// remoteIP is the default client identity: the address the request came
// from, without its port.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// admitStream takes a place for the stream r asks for, or answers 503
// naming the limit.
func (b *Bridge[S, I, V]) admitStream(w http.ResponseWriter, r *http.Request) (free func(), ok bool) {
	free, err := b.limits.admit(b.cfg.ClientID(r))
	if err != nil {
		w.Header().Set("Retry-After", "5")
		w.Header().Set("Connection", "close") // its socket is given back too
		wire.WriteError(w, http.StatusServiceUnavailable, "%v", err)
		return nil, false
	}
	if h, ok := r.Context().Value(streamHoldKey{}).(*streamHold); ok && h.taken.CompareAndSwap(false, true) {
		// A Fleet's stream: what keeps its agent active is given back
		// when the stream ends, which may be long after the handler
		// returns (the hub serves it).
		release := free
		free = func() { release(); h.release() }
	}
	return free, true
}

// streamHold is what a Fleet holds for a stream (the agent's lease, its
// place among the fleet's streams): the stream takes it over, if it is
// admitted, to give back when it ends; otherwise the Fleet gives it back.
type streamHold struct {
	taken   atomic.Bool
	release func()
}

type streamHoldKey struct{}
