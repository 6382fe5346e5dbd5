// Package replay is the command that replays an agent's journals against
// the agent's code of today: the main of `agentgen replay`, which agentgen
// builds in the agent's module (a temporary package that imports the
// agent's impl/agent and decl and calls Main) and runs with go run, since
// a transition is Go code that agentgen cannot load otherwise. An agent's
// own binary may call Main too, as a replay subcommand:
//
//	os.Exit(replay.Main(agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
//		Codec: journal.JSONGob[decl.AgentState](decl.DecodeInput),
//	}, os.Args[2:], os.Stdout, os.Stderr))
//
// The arguments are journals of the embedded backends: bbolt files
// (bolt.Open's: one agent each; bolt.OpenFleet's: each agent, named
// file#id, in order of id) and pebble directories (pebble.Open's and
// pebble.OpenFleet's, alike); and directories, in which every file ending
// in .db and every pebble journal is replayed, in lexical order, one at a
// time: one journal's records are read as they are
// replayed, never held. Each journal is run through journal.Replay, and
// the first divergence per journal is printed with its input and its JSON
// Patch; then a summary. The exit code is 0 when every journal is
// identical, 1 when one diverged, 2 on an error (a journal that does not
// read, a bad argument).
//
// With -accept, a journal that diverged, or that has records without a
// digest, is rewritten as today's code records it (journal.Accept: the same
// inputs, the new states' digests and snapshots), the way a golden file is
// updated: into a file (or pebble directory) beside it, renamed over it
// once written (a fleet's is written again whole, every agent accepted,
// with its info). With
// -json, the report is one JSON object (journals, summary) on stdout.
//
// It is not for a journal in use: both backends lock their journal, and a
// journal an agent has open is refused.
package replay

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/pebble"
)

// Exit codes of Main.
const (
	ExitIdentical = 0
	ExitDiverged  = 1
	ExitError     = 2
)

// Journal is the report on one journal file.
type Journal struct {
	Path string `json:"path"`
	*journal.ReplayReport
	// Accepted says that -accept rewrote the journal.
	Accepted bool `json:"accepted,omitempty"`
}

// Summary counts the journals (agents) and inputs replayed, and how many
// journals were identical and how many diverged.
type Summary struct {
	Agents    int `json:"agents"`
	Inputs    int `json:"inputs"`
	Identical int `json:"identical"`
	Diverged  int `json:"diverged"`
	Accepted  int `json:"accepted,omitempty"`
}

// Main replays the journals that args name (flags -accept and -json, then
// files and directories) against def with opts, writes the report to
// stdout and errors to stderr, and returns the exit code.
func Main[S, I any](def automata.Definition[S, I], opts journal.Options[S, I], args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("replay", flag.ContinueOnError)
	fl.SetOutput(stderr)
	accept := fl.Bool("accept", false, "rewrite each journal that diverged with today's states and digests")
	asJSON := fl.Bool("json", false, "write the report as JSON")
	if err := fl.Parse(args); err != nil {
		return ExitError
	}
	if fl.NArg() == 0 {
		fmt.Fprintln(stderr, "replay: no journal given (.db files, pebble directories, or directories of them)")
		return ExitError
	}
	var (
		sum      Summary
		journals []Journal // the reports, for -json: small, unlike the journals
	)
	add := func(j Journal) error {
		sum.Agents++
		sum.Inputs += j.Inputs
		switch {
		case j.Accepted:
			sum.Accepted++
			sum.Identical++
		case j.Identical():
			sum.Identical++
		default:
			sum.Diverged++
		}
		if *asJSON {
			journals = append(journals, j)
		} else {
			writeText(stdout, j)
		}
		return nil
	}
	err := eachJournal(fl.Args(), func(path string) error {
		if err := replayFile(path, def, opts, *accept, add); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "replay: %v\n", err)
		return ExitError
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Journals []Journal `json:"journals"`
			Summary  Summary   `json:"summary"`
		}{journals, sum}); err != nil {
			fmt.Fprintf(stderr, "replay: %v\n", err)
			return ExitError
		}
	} else {
		fmt.Fprintf(stdout, "agents %d, inputs %d, identical %d, diverged %d", sum.Agents, sum.Inputs, sum.Identical, sum.Diverged)
		if *accept {
			fmt.Fprintf(stdout, ", accepted %d", sum.Accepted)
		}
		fmt.Fprintln(stdout)
	}
	if sum.Diverged > 0 {
		return ExitDiverged
	}
	return ExitIdentical
}

// eachJournal calls fn with each journal args name: a file or a pebble
// directory as it is, a directory's files ending in .db and pebble
// directories, in lexical order.
func eachJournal(args []string, fn func(path string) error) error {
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			return err
		}
		if !info.IsDir() || isPebble(arg) {
			if err := fn(arg); err != nil {
				return err
			}
			continue
		}
		found := false
		err = filepath.WalkDir(arg, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && path != arg && isPebble(path):
				found = true
				if err := fn(path); err != nil {
					return err
				}
				return fs.SkipDir
			case d.Type().IsRegular() && strings.HasSuffix(path, ".db"):
				found = true
				return fn(path)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%s: no journal (.db file or pebble directory) in the directory", arg)
		}
	}
	return nil
}

// isPebble says whether dir holds a pebble database: the OPTIONS file
// pebble writes in every one.
func isPebble(dir string) bool {
	options, err := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	return err == nil && len(options) > 0
}

// backend opens the journals of one embedded backend.
type backend struct {
	open      func(path string) (journal.Store, error)
	openFleet func(path string) (journal.Fleet, error)
}

var (
	boltBackend = backend{
		open: func(path string) (journal.Store, error) {
			s, err := bolt.Open(path)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		openFleet: func(path string) (journal.Fleet, error) {
			f, err := bolt.OpenFleet(path)
			if err != nil {
				return nil, err
			}
			return f, nil
		},
	}
	pebbleBackend = backend{
		open: func(path string) (journal.Store, error) {
			s, err := pebble.Open(path)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		openFleet: func(path string) (journal.Fleet, error) {
			f, err := pebble.OpenFleet(path)
			if err != nil {
				return nil, err
			}
			return f, nil
		},
	}
)

// replayFile replays the journal at path, a store's, or each agent's of a
// fleet's, in order of id; with accept, it rewrites the journal when one
// diverged or lacks digests.
func replayFile[S, I any](path string, def automata.Definition[S, I], opts journal.Options[S, I], accept bool, fn func(Journal) error) error {
	be := boltBackend
	if isPebble(path) {
		be = pebbleBackend
	}
	src, err := be.open(path)
	if err != nil {
		fleet, ferr := be.openFleet(path)
		if ferr != nil {
			return err // not a fleet either: Open's error says what it is
		}
		return replayFleet(path, be, fleet, def, opts, accept, fn)
	}
	rep, err := journal.Replay(src, def, opts)
	if err != nil || !accept || rep.Identical() && rep.Digests == rep.Inputs {
		if err = errors.Join(err, src.Close()); err != nil {
			return err
		}
		return fn(Journal{Path: path, ReplayReport: rep})
	}
	tmp, err := fresh(path)
	if err != nil {
		return errors.Join(err, src.Close())
	}
	dst, err := be.open(tmp)
	if err != nil {
		return errors.Join(err, src.Close())
	}
	rep, err = journal.Accept(src, dst, def, opts)
	if err = commit(tmp, path, errors.Join(err, src.Close(), dst.Close())); err != nil {
		return err
	}
	return fn(Journal{Path: path, ReplayReport: rep, Accepted: true})
}

// fresh returns the path of the file (or directory) beside path that an
// accepted journal is written to, removing what a failed run left there.
func fresh(path string) (string, error) {
	tmp := path + ".accept"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	return tmp, nil
}

// commit renames tmp over path, unless err; then it removes tmp. A pebble
// directory, which a rename cannot replace, is first renamed aside to
// path.old, removed once tmp took its place.
func commit(tmp, path string, err error) error {
	if err == nil {
		if info, serr := os.Stat(path); serr == nil && info.IsDir() {
			old := path + ".old"
			if err = os.RemoveAll(old); err == nil {
				if err = os.Rename(path, old); err == nil {
					if err = os.Rename(tmp, path); err == nil {
						err = os.RemoveAll(old)
					}
				}
			}
		} else {
			err = os.Rename(tmp, path)
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("accepting: %w", err)
	}
	return nil
}

// replayFleet replays each agent of fleet, the file at path, and, with
// accept, when one diverged or lacks digests, rewrites the whole file: each
// agent accepted into a new fleet file, renamed over it.
func replayFleet[S, I any](path string, be backend, fleet journal.Fleet, def automata.Definition[S, I], opts journal.Options[S, I], accept bool, fn func(Journal) error) (err error) {
	defer func() { err = errors.Join(err, fleet.Close()) }()
	var reports []Journal // with accept: one small report per agent
	rewrite := false
	err = fleet.List("", func(id string, _ journal.AgentInfo) error {
		store, err := fleet.Open(id)
		if err != nil {
			return err
		}
		rep, err := journal.Replay(store, def, opts)
		if err = errors.Join(err, store.Close()); err != nil {
			return fmt.Errorf("agent %s: %w", id, err)
		}
		j := Journal{Path: path + "#" + id, ReplayReport: rep}
		if !accept {
			return fn(j)
		}
		rewrite = rewrite || !rep.Identical() || rep.Digests < rep.Inputs
		reports = append(reports, j)
		return nil
	})
	if err != nil || !accept {
		return err
	}
	if rewrite {
		if err := acceptFleet(path, be, fleet, def, opts, reports); err != nil {
			return err
		}
	}
	for _, j := range reports {
		if err := fn(j); err != nil {
			return err
		}
	}
	return nil
}

// acceptFleet writes every agent of fleet, with its info, accepted, into a
// new fleet file renamed over path; the reports of those that diverged or
// lacked digests are marked accepted.
func acceptFleet[S, I any](path string, be backend, fleet journal.Fleet, def automata.Definition[S, I], opts journal.Options[S, I], reports []Journal) error {
	tmp, err := fresh(path)
	if err != nil {
		return err
	}
	dst, err := be.openFleet(tmp)
	if err != nil {
		return err
	}
	i := 0
	err = fleet.List("", func(id string, info journal.AgentInfo) error {
		if err := dst.Create(id, info); err != nil {
			return err
		}
		from, err := fleet.Open(id)
		if err != nil {
			return err
		}
		to, err := dst.Open(id)
		if err != nil {
			return errors.Join(err, from.Close())
		}
		_, err = journal.Accept(from, to, def, opts)
		if err = errors.Join(err, from.Close(), to.Close()); err != nil {
			return fmt.Errorf("agent %s: %w", id, err)
		}
		if j := &reports[i]; !j.Identical() || j.Digests < j.Inputs {
			j.Accepted = true
		}
		i++
		return nil
	})
	return commit(tmp, path, errors.Join(err, dst.Close()))
}

func writeText(w io.Writer, j Journal) {
	counts := fmt.Sprintf("%d inputs, %d digests and %d snapshots compared", j.Inputs, j.Digests, j.Snapshots)
	d := j.Divergence
	switch {
	case j.Accepted && d == nil:
		fmt.Fprintf(w, "accepted  %s: %s; identical, its digests now recorded\n", j.Path, counts)
		return
	case j.Accepted:
		fmt.Fprintf(w, "accepted  %s: %s; diverged at input %d, today's states now recorded\n", j.Path, counts, d.Seq)
		return
	case d == nil:
		fmt.Fprintf(w, "identical %s: %s\n", j.Path, counts)
		return
	}
	where := fmt.Sprintf("input %d", d.Seq)
	if d.Since+1 < d.Seq {
		where = fmt.Sprintf("inputs %d..%d (identical at %d, different at %d)", d.Since+1, d.Seq, d.Since, d.Seq)
	}
	fmt.Fprintf(w, "diverged  %s: %s; first at %s\n", j.Path, counts, where)
	fmt.Fprintf(w, "  input %d (%s, version %d): %s\n", d.Seq, d.Time.Format("2006-01-02T15:04:05.000Z07:00"), d.Version, d.Input)
	step, _ := json.Marshal(d.Step)
	fmt.Fprintf(w, "  today's transition of it: %s\n", step)
	if d.DiffAt == 0 {
		fmt.Fprintf(w, "  no recorded state to diff against: no snapshot at or after %d\n", d.Seq)
		return
	}
	diff, _ := json.Marshal(d.Diff)
	fmt.Fprintf(w, "  recorded -> replayed state at %d: %s\n", d.DiffAt, diff)
}
