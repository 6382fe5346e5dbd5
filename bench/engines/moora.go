package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/moora-go/moora/automata/journal/jetstream/embedded"
	"github.com/moora-go/moora/automata/journal/pebble"
)

// The turn on moora-go: four inputs, each journaled (fsync'd) before it is
// applied. The user's input is dispatched from outside; the state then
// calls for a "model" job, whose answer calls for a "tool" job, whose
// answer calls for a "reply" job; the reply ends the turn.

type phase int

const (
	idle      phase = iota // the last turn is done
	wantModel              // the user's input is in
	wantTool               // the model asked for the tool
	wantReply              // the tool answered
)

type convState struct {
	Turn  int    `json:"turn"`  // the current turn
	Phase phase  `json:"phase"` // where it is
	Done  int    `json:"done"`  // the last turn replied to
	Last  string `json:"last"`  // the text of the last input
}

type convInput struct {
	Kind string `json:"kind"` // "user", "model", "tool", "reply"
	Turn int    `json:"turn"`
	Text string `json:"text"`
}

var convModel = automata.Definition[convState, convInput]{
	Initial: func() convState { return convState{} },
	Transition: func(s convState, in convInput) convState {
		switch {
		case in.Kind == "user" && s.Phase == idle && in.Turn == s.Done+1:
			s.Turn, s.Phase = in.Turn, wantModel
		case in.Kind == "model" && s.Phase == wantModel && in.Turn == s.Turn:
			s.Phase = wantTool
		case in.Kind == "tool" && s.Phase == wantTool && in.Turn == s.Turn:
			s.Phase = wantReply
		case in.Kind == "reply" && s.Phase == wantReply && in.Turn == s.Turn:
			s.Phase, s.Done = idle, s.Turn
		default:
			return s
		}
		s.Last = in.Text
		return s
	},
}

// convJobs: the job the state calls for, keyed by the turn; each answers at
// once.
func convJobs(s convState) map[string]automata.Job[convInput] {
	var kind, text string
	switch s.Phase {
	case wantModel:
		kind, text = "model", `{"tool_call":"lookup","args":{"q":"weather"}}`
	case wantTool:
		kind, text = "tool", `{"result":"sunny"}`
	case wantReply:
		kind, text = "reply", "It is sunny."
	default:
		return nil
	}
	turn := s.Turn
	return map[string]automata.Job[convInput]{
		fmt.Sprintf("%s/%d", kind, turn): func(ctx context.Context, dispatch automata.Dispatch[convInput]) error {
			dispatch(convInput{Kind: kind, Turn: turn, Text: text})
			return nil
		},
	}
}

const userText = "What is the weather like today? Please look it up for me."

// mooraConvs opens a Machine per conversation on the stores open returns
// and runs turns on them.
func mooraConvs(ctx context.Context, convs int, open func(id string) (journal.Store, error), closeAll func() error) (func(ctx context.Context, c, k int) error, func() error, error) {
	machines := make([]*journal.Machine[convState, convInput], convs)
	signals := make([]chan int, convs)
	turns := make([]uint64, convs) // turns done, per conversation (each its own goroutine's)
	var unsubs []func()
	teardown := func() error {
		for _, u := range unsubs {
			u()
		}
		var errs []error
		for c, m := range machines {
			if m != nil {
				// Every turn is four inputs in the journal, no more.
				if got, want := m.Seq(), 4*turns[c]; got != want {
					errs = append(errs, fmt.Errorf("conversation %d: %d inputs journaled for %d turns, want %d", c, got, turns[c], want))
				}
				cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				errs = append(errs, m.Close(cctx))
				cancel()
			}
		}
		errs = append(errs, closeAll())
		return errors.Join(errs...)
	}
	for c := range convs {
		store, err := open(fmt.Sprintf("conv-%03d", c))
		if err != nil {
			teardown()
			return nil, nil, err
		}
		m, err := journal.Open(store, convModel, journal.Options[convState, convInput]{
			Codec: journal.JSON[convState, convInput](nil),
		}, automata.WithJobs(convJobs))
		if err != nil {
			store.Close()
			teardown()
			return nil, nil, err
		}
		machines[c] = m
		ch := make(chan int, 16)
		signals[c] = ch
		last := 0
		// Subscribers are called only after the input is committed: a
		// state with Done == k means all four inputs of turn k are on disk.
		unsubs = append(unsubs, m.Subscribe(func(s convState) {
			if s.Done > last {
				last = s.Done
				select {
				case ch <- s.Done:
				default:
				}
			}
		}))
	}
	turn := func(ctx context.Context, c, k int) error {
		m := machines[c]
		if err := m.Dispatch(ctx, convInput{Kind: "user", Turn: k, Text: userText}); err != nil {
			return err
		}
		for {
			select {
			case d := <-signals[c]:
				if d >= k {
					turns[c]++
					return nil
				}
			case <-m.Done():
				return fmt.Errorf("machine stopped: %v", m.Err())
			case <-ctx.Done():
				return fmt.Errorf("waiting for the reply: %w (state %+v)", ctx.Err(), m.Current())
			}
		}
	}
	return turn, teardown, nil
}

func fleetOpener(f journal.Fleet) func(id string) (journal.Store, error) {
	return func(id string) (journal.Store, error) {
		if err := f.Create(id, journal.AgentInfo{Owner: "bench", Created: time.Now().UTC()}); err != nil {
			return nil, err
		}
		return f.Open(id)
	}
}

func mooraPebbleFleet() engine {
	return engine{
		name:       "moora-go pebble Fleet",
		durability: "one pebble directory for all conversations; fdatasync at every commit (group commit)",
		setup: func(ctx context.Context, dir string, convs int) (func(context.Context, int, int) error, func() error, error) {
			f, err := pebble.OpenFleet(filepath.Join(dir, "fleet.pebble"))
			if err != nil {
				return nil, nil, err
			}
			return mooraConvs(ctx, convs, fleetOpener(f), f.Close)
		},
	}
}

func mooraPebbleStore() engine {
	return engine{
		name:       "moora-go pebble Store",
		durability: "one pebble directory per conversation; fdatasync at every commit",
		setup: func(ctx context.Context, dir string, convs int) (func(context.Context, int, int) error, func() error, error) {
			return mooraConvs(ctx, convs, func(id string) (journal.Store, error) {
				return pebble.Open(filepath.Join(dir, id+".pebble"))
			}, func() error { return nil })
		},
	}
}

func mooraBoltFleet() engine {
	return engine{
		name:       "moora-go bbolt Fleet",
		durability: "one bbolt file for all conversations; fsync at every commit (group commit)",
		setup: func(ctx context.Context, dir string, convs int) (func(context.Context, int, int) error, func() error, error) {
			f, err := bolt.OpenFleet(filepath.Join(dir, "fleet.db"))
			if err != nil {
				return nil, nil, err
			}
			return mooraConvs(ctx, convs, fleetOpener(f), f.Close)
		},
	}
}

func mooraBoltStore() engine {
	return engine{
		name:       "moora-go bbolt Store",
		durability: "one bbolt file per conversation; fsync at every commit",
		setup: func(ctx context.Context, dir string, convs int) (func(context.Context, int, int) error, func() error, error) {
			return mooraConvs(ctx, convs, func(id string) (journal.Store, error) {
				return bolt.Open(filepath.Join(dir, id+".db"))
			}, func() error { return nil })
		},
	}
}

func mooraJetStream() engine {
	return engine{
		name:       "moora-go JetStream",
		durability: "embedded nats-server, R1, sync_always (fsync before every ack)",
		setup: func(ctx context.Context, dir string, convs int) (func(context.Context, int, int) error, func() error, error) {
			srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(dir, "nats")}) // SyncInterval 0: sync_always
			if err != nil {
				return nil, nil, err
			}
			nc, err := srv.Connect()
			if err != nil {
				srv.Shutdown()
				return nil, nil, err
			}
			f, err := jetstream.OpenFleet(ctx, nc, jetstream.Config{}, "bench")
			if err != nil {
				nc.Close()
				srv.Shutdown()
				return nil, nil, err
			}
			return mooraConvs(ctx, convs, fleetOpener(f), func() error {
				err := f.Close()
				nc.Close()
				srv.Shutdown()
				return err
			})
		},
	}
}
