package jetstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/moora-go/moora/automata/journal"
	js "github.com/nats-io/nats.go/jetstream"
)

// The directory of a fleet's processes: where each serves (Advertise), who
// has an agent active and where (Locate), taking an agent from a process
// known dead (Evict), and the agents whose owner died (WatchOrphans). It is
// what an HTTP front needs to route a request to the process that has the
// agent active (automata/httpbridge's FleetConfig.Peers).

// hostKey is the key of owner in the bucket Config.Hosts: an owner id may
// hold characters a key may not (a host name and a process id, "web-1:4242").
func hostKey(owner string) string { return base64.RawURLEncoding.EncodeToString([]byte(owner)) }

// hostValue is the value of a process's key.
type hostValue struct {
	URL     string `json:"url"`
	Leaving bool   `json:"leaving,omitempty"`
}

// maxHostURL bounds an advertised URL.
const maxHostURL = 2048

// advert is what a Fleet advertises, and its renewer.
type advert struct {
	mu      sync.Mutex
	value   []byte        // the key's value; nil until Advertise
	leaving bool          // Leave was called: no more renewals
	stop    chan struct{} // closed by Leave and Close: ends the renewer
	done    chan struct{} // closed when the renewer has ended
}

// hosts returns the bucket Config.Hosts, creating it on first use: its keys
// expire TTL after their last write.
func (f *Fleet) hosts(ctx context.Context) (js.KeyValue, error) {
	f.hostsMu.Lock()
	defer f.hostsMu.Unlock()
	if f.hostsKV != nil {
		return f.hostsKV, nil
	}
	kv, err := f.res.js.KeyValue(ctx, f.cfg.Hosts)
	if errors.Is(err, js.ErrBucketNotFound) {
		kv, err = f.res.js.CreateKeyValue(ctx, js.KeyValueConfig{Bucket: f.cfg.Hosts, TTL: f.cfg.TTL, Storage: js.FileStorage, Replicas: f.cfg.Replicas})
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: key-value bucket %s: %w", f.cfg.Hosts, err)
	}
	f.hostsKV = kv
	return kv, nil
}

// Advertise says where this process serves the fleet's agents: rawURL, the
// base URL of its HTTP front, kept under the fleet's owner in the bucket
// Config.Hosts. The key is written again every TTL/4 and expires TTL after
// the last write, so that a process that dies stops being advertised
// within TTL. Another process's Locate finds the URL there. Advertise
// again to change the URL.
//
// When the process stops, call Leave as its shutdown begins.
func (f *Fleet) Advertise(rawURL string) error {
	if u, err := url.Parse(rawURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(rawURL) > maxHostURL {
		return fmt.Errorf("jetstream: Advertise(%.100q): want an http or https URL with a host, at most %d bytes", rawURL, maxHostURL)
	}
	if err := f.checkOpen(); err != nil {
		return err
	}
	value, err := json.Marshal(hostValue{URL: rawURL})
	if err != nil {
		return err
	}
	a := &f.advert
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.leaving {
		return fmt.Errorf("jetstream: Advertise(%.100q): %s has left (Leave)", rawURL, f.owner)
	}
	if err := f.putHost(value); err != nil {
		return err
	}
	a.value = value
	if a.stop == nil {
		a.stop, a.done = make(chan struct{}), make(chan struct{})
		go f.renewHost(a.stop, a.done)
	}
	return nil
}

// putHost writes the fleet's key in the bucket Config.Hosts.
func (f *Fleet) putHost(value []byte) error {
	ctx, cancel := f.ctx()
	defer cancel()
	kv, err := f.hosts(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, hostKey(f.owner), value); err != nil {
		return fmt.Errorf("jetstream: advertising %s: %w", f.owner, err)
	}
	return nil
}

// renewHost writes the key again every TTL/4 until Leave or Close; a write
// that fails is tried again within the quarter.
func (f *Fleet) renewHost(stop <-chan struct{}, done chan<- struct{}) {
	a := &f.advert
	defer close(done)
	tick := time.NewTicker(f.cfg.TTL / 4)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for deadline := time.Now().Add(f.cfg.TTL / 4); time.Now().Before(deadline); {
			a.mu.Lock()
			value := a.value
			a.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), f.cfg.TTL/8)
			kv, err := f.hosts(ctx)
			if err == nil {
				_, err = kv.Put(ctx, hostKey(f.owner), value)
			}
			cancel()
			if err == nil {
				break
			}
			select {
			case <-stop:
				return
			case <-time.After(f.cfg.TTL / 16):
			}
		}
	}
}

// Leave says that this process is leaving: its key says so, and is no
// longer renewed (it expires TTL later). Call it as the process's shutdown
// begins, before its HTTP server stops taking connections, and then close
// its registry, which releases its agents' leases: until they are
// released, another process whose request for one of them finds no one
// listening waits for the lease instead of taking the agent from a
// process that is finishing with it. Leave after Leave does nothing.
func (f *Fleet) Leave() error {
	a := &f.advert
	a.mu.Lock()
	if a.leaving || a.value == nil {
		a.leaving = true
		a.mu.Unlock()
		return nil
	}
	a.leaving = true
	var v hostValue
	json.Unmarshal(a.value, &v)
	v.Leaving = true
	value, _ := json.Marshal(v)
	a.value = value
	a.mu.Unlock()
	a.end()
	return f.putHost(value)
}

// end stops the renewer, if one runs, and waits for it.
func (a *advert) end() {
	a.mu.Lock()
	stop, done := a.stop, a.done
	a.stop, a.leaving = nil, true
	a.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// Owner returns the owner id this fleet takes leases under (OpenFleet's).
func (f *Fleet) Owner() string { return f.owner }

// Locate says who has agent id active and where: the holder of the agent's
// lease, owner ("" when no process holds it: Open may claim it), the URL
// that process advertises (Advertise; "" when it advertises none: it
// stopped renewing more than TTL ago, or serves no HTTP front), and
// whether it is leaving (Leave). Both are read from the leaders of their
// buckets' streams, within Config.Timeout. An owner that is this fleet's
// own is returned as any other.
func (f *Fleet) Locate(ctx context.Context, id string) (owner, rawURL string, leaving bool, err error) {
	if err := journal.CheckAgentID(id); err != nil {
		return "", "", false, err
	}
	// Each read bounded as every request is (Config.Timeout): a server
	// that lost a request (its stream's leader died) is asked again by
	// the caller, not waited for as long as ctx allows.
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	e, err := kvLast(ctx, f.nc, f.cfg.Leases, id)
	switch {
	case errors.Is(err, js.ErrKeyNotFound) || err == nil && e.deleted:
		return "", "", false, nil
	case err != nil:
		return "", "", false, unavailable(fmt.Errorf("jetstream: locating agent %s: reading its lease: %w", id, err))
	}
	owner = string(e.value)
	if _, err := f.hosts(ctx); err != nil {
		return owner, "", false, err
	}
	h, err := kvLast(ctx, f.nc, f.cfg.Hosts, hostKey(owner))
	switch {
	case errors.Is(err, js.ErrKeyNotFound) || err == nil && h.deleted:
		return owner, "", false, nil
	case err != nil:
		return owner, "", false, unavailable(fmt.Errorf("jetstream: locating agent %s: reading where %s serves: %w", id, owner, err))
	}
	var v hostValue
	if err := json.Unmarshal(h.value, &v); err != nil || v.URL == "" {
		return owner, "", false, fmt.Errorf("jetstream: locating agent %s: the key of %s in bucket %s holds %.100q, not {\"url\": ...}", id, owner, f.cfg.Hosts, h.value)
	}
	return owner, v.URL, v.Leaving, nil
}

// Evict takes agent id from owner, a process known to be dead (its URL
// refuses connections, and it has not said it is leaving: Evict reads that
// again, and leaves a leaving owner its agent): it deletes the
// agent's lease if owner still holds it, so that Open may claim the agent
// at once instead of waiting up to TTL for the lease to expire. It does
// nothing if another process holds the lease by now, or none does.
//
// If owner is alive after all (a partition, a pause), the claim that
// follows fences it as Takeover does: its lease renewal finds the key gone
// and its next append is refused, so it loses the agent and nothing else.
func (f *Fleet) Evict(ctx context.Context, id, owner string) error {
	if err := journal.CheckAgentID(id); err != nil {
		return err
	}
	if owner == "" || owner == f.owner {
		return fmt.Errorf("jetstream: Evict(%s, %q): want another process's owner id", id, owner)
	}
	e, err := kvLast(ctx, f.nc, f.cfg.Leases, id)
	switch {
	case errors.Is(err, js.ErrKeyNotFound) || err == nil && (e.deleted || string(e.value) != owner):
		return nil
	case err != nil:
		return fmt.Errorf("jetstream: evicting %s from agent %s: reading its lease: %w", owner, id, err)
	}
	// Read again now: a process that said it is leaving since its caller
	// located it keeps its agents until it releases them.
	if h, err := kvLast(ctx, f.nc, f.cfg.Hosts, hostKey(owner)); err == nil && !h.deleted {
		var v hostValue
		if json.Unmarshal(h.value, &v) == nil && v.Leaving {
			return nil
		}
	}
	if err := f.res.leases.Delete(ctx, id, js.LastRevision(e.rev)); err != nil && !errors.Is(err, js.ErrKeyRevisionMismatch) && !isWrongLast(err) {
		return fmt.Errorf("jetstream: evicting %s from agent %s: %w", owner, id, err)
	}
	return nil
}

// WatchOrphans calls fn with the id of each agent whose lease expires from
// now until ctx ends: an agent whose owner died, or lost touch with
// JetStream for TTL, while it had the agent active. Activate it
// (registry.Get, then release), so that the jobs its state calls for start
// again now rather than at its next request; every process watching races
// for it, and one claims it. A lease released (a deactivation, a Close) or
// evicted is not an orphan's.
//
// fn is called from one goroutine, in the order of the expiries; it should
// hand the work off rather than block. An expiry that happens while the
// watch is cut off from the server may be missed: that agent then waits for
// its next request. WatchOrphans returns once the watch has started.
func (f *Fleet) WatchOrphans(ctx context.Context, fn func(id string)) error {
	w, err := f.res.leases.WatchAll(ctx, js.MetaOnly(), js.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("jetstream: watching the leases: %w", err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				// An expiry leaves a marker the watch reads as a purge;
				// a release is a delete.
				if e != nil && e.Operation() == js.KeyValuePurge && journal.CheckAgentID(e.Key()) == nil {
					fn(e.Key())
				}
			}
		}
	}()
	return nil
}
