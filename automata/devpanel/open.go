package devpanel

import (
	"context"
	"errors"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
)

// Open opens the agent in store as journal.Open does, with cfg.Definition,
// opts and options (the agent's jobs, admission, events), adds the panel's
// own options (Options), and attaches the panel: the one call that wires a
// panel into any agent. Mounting the panel, which is an http.Handler, is up
// to the program; unmounted, it serves nothing.
//
// Open takes store over: the agent closes it when it closes, and Open
// closes it when it fails.
//
// The panel closes when the agent is done (Machine.Close); a server that
// shuts down first should close it then, as http.Server.Shutdown does not
// end event streams: srv.RegisterOnShutdown(panel.Close).
func Open[S, I any](store journal.Store, cfg Config[S, I], opts journal.Options[S, I], options ...automata.Option[S, I]) (*journal.Machine[S, I], *Panel[S, I], error) {
	p, err := New(cfg)
	if err != nil {
		return nil, nil, errors.Join(err, store.Close())
	}
	return attach(store, p, cfg, opts, options...)
}

// attach opens the agent in store with the panel's options and attaches
// the panel p, made of cfg: Open once the panel is made.
func attach[S, I any](store journal.Store, p *Panel[S, I], cfg Config[S, I], opts journal.Options[S, I], options ...automata.Option[S, I]) (*journal.Machine[S, I], *Panel[S, I], error) {
	options = append(options[:len(options):len(options)], p.Options())
	m, err := journal.Open(store, cfg.Definition, opts, options...)
	if err != nil {
		return nil, nil, errors.Join(err, store.Close())
	}
	if err := p.Attach(m); err != nil {
		p.Close()
		return nil, nil, errors.Join(err, m.Close(context.Background()))
	}
	go func() {
		select {
		case <-m.Done():
			p.Close()
		case <-p.done:
		}
	}()
	return m, p, nil
}
