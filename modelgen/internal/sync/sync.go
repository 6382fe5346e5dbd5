package sync

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/implscan"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/rogpeppe/go-internal/diff"
)

// ChangeKind says what Write does to a file.
type ChangeKind uint8

// The changes Write makes.
const (
	Created ChangeKind = iota
	Updated
	Deleted
)

func (k ChangeKind) String() string {
	return [...]string{"created", "updated", "deleted"}[k]
}

// Change is one file Write creates, rewrites or deletes.
type Change struct {
	Path string // slash-separated, relative to the spec's directory
	Kind ChangeKind
}

// ErrNotGenerated is returned by Plan, Write and Compare when a file that
// agentgen generates exists without the generated header: it was written
// by a person, and agentgen never overwrites it.
var ErrNotGenerated = errors.New("a file agentgen generates exists, but agentgen did not write it")

// Plan compares generated output with the files under dir (the spec's
// directory) and returns the changes Write would make, sorted by path:
// missing files are created, owned files whose bytes differ are updated,
// and owned files in the output's directories that the output no longer
// has are deleted. Files that are not owned are only ever created, and a
// file that is not owned on disk (it lacks gen.Header) is never overwritten:
// Plan fails with ErrNotGenerated instead.
func Plan(dir string, out *gen.Output) ([]Change, error) {
	var changes []Change
	for _, f := range out.Files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			changes = append(changes, Change{f.Path, Created})
		case err != nil:
			return nil, err
		case f.Owned && !bytes.Equal(data, f.Data):
			if !gen.IsOwned(data) {
				return nil, fmt.Errorf("%w: %s does not start with the line %q; move it away", ErrNotGenerated, f.Path, gen.Header)
			}
			changes = append(changes, Change{f.Path, Updated})
		}
	}
	extra, err := extraFiles(dir, out)
	if err != nil {
		return nil, err
	}
	for _, p := range extra {
		changes = append(changes, Change{p, Deleted})
	}
	slices.SortFunc(changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return changes, nil
}

// extraFiles lists the owned files in the output's directories that the
// output does not have. Only the top level of each directory is looked at:
// a generator owns the files it writes there, never a subdirectory (a
// package of its own, testdata), whatever header its files carry.
func extraFiles(dir string, out *gen.Output) ([]string, error) {
	generated := make(map[string]bool, len(out.Files))
	for _, f := range out.Files {
		generated[f.Path] = true
	}
	var extra []string
	for _, d := range out.Dirs {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(d)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			rel := path.Join(d, e.Name())
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".go") || generated[rel] {
				continue
			}
			owned, err := fileIsOwned(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				return nil, err
			}
			if owned {
				extra = append(extra, rel)
			}
		}
	}
	return extra, nil
}

func fileIsOwned(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, len(gen.Header)+2)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return gen.IsOwned(buf[:n]), nil
}

// Rename and Remove are the file system operations Write and Prune use;
// tests replace them to make the file system fail.
var (
	Rename = os.Rename
	Remove = os.Remove
)

// Write makes the files under dir match the output (see Plan) and returns
// the changes it made. It makes all of them or none: new contents go to
// temporary files beside their targets first, replaced and deleted files
// are kept aside until every rename succeeded, and on any failure the
// previous tree is restored and the temporary files are removed.
func Write(dir string, out *gen.Output) (changes []Change, err error) {
	changes, err = Plan(dir, out)
	if err != nil || len(changes) == 0 {
		return nil, err
	}
	data := make(map[string][]byte, len(out.Files))
	for _, f := range out.Files {
		data[f.Path] = f.Data
	}
	type step struct {
		target, tmp, backup string
	}
	var (
		steps       []*step
		createdDirs []string
	)
	defer func() {
		if err == nil {
			for _, s := range steps {
				if s.backup != "" {
					_ = Remove(s.backup)
				}
			}
			return
		}
		changes = nil
		// Roll back in reverse: put back what was moved aside, remove what
		// was written.
		for i := len(steps) - 1; i >= 0; i-- {
			s := steps[i]
			if s.tmp != "" {
				_ = os.Remove(s.tmp)
			}
			if s.backup != "" {
				if _, statErr := os.Lstat(s.backup); statErr == nil {
					_ = os.Rename(s.backup, s.target)
				}
			}
		}
		for i := len(createdDirs) - 1; i >= 0; i-- {
			_ = os.Remove(createdDirs[i])
		}
	}()
	// 1. Write the new contents to temporary files.
	for _, c := range changes {
		target := filepath.Join(dir, filepath.FromSlash(c.Path))
		s := &step{target: target}
		steps = append(steps, s)
		if c.Kind == Deleted {
			continue
		}
		dirs, err := mkdirAll(filepath.Dir(target))
		createdDirs = append(createdDirs, dirs...)
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", c.Path, err)
		}
		if s.tmp, err = writeTemp(filepath.Dir(target), data[c.Path]); err != nil {
			return nil, fmt.Errorf("writing %s: %w", c.Path, err)
		}
	}
	// 2. Move the files to replace or delete aside.
	for i, c := range changes {
		if c.Kind == Created {
			continue
		}
		s := steps[i]
		backup, err := tempName(filepath.Dir(s.target), ".agentgen-*.old")
		if err != nil {
			return nil, fmt.Errorf("replacing %s: %w", c.Path, err)
		}
		if err := Rename(s.target, backup); err != nil {
			return nil, fmt.Errorf("replacing %s: %w", c.Path, err)
		}
		s.backup = backup
	}
	// 3. Move the new contents in place.
	for i, c := range changes {
		s := steps[i]
		if s.tmp == "" {
			continue
		}
		if err := Rename(s.tmp, s.target); err != nil {
			return nil, fmt.Errorf("writing %s: %w", c.Path, err)
		}
		s.tmp = ""
		if c.Kind == Created {
			// On rollback, remove it again.
			s.tmp = s.target
		}
	}
	return changes, nil
}

// mkdirAll creates dir and its missing parents and returns the ones it
// created, outermost first.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(missing)
	var created []string
	for _, d := range missing {
		if err := os.Mkdir(d, 0o755); err != nil {
			return created, err
		}
		created = append(created, d)
	}
	return created, nil
}

func writeTemp(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".agentgen-*.tmp")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// tempName returns the name of a file in dir that does not exist.
func tempName(dir, pattern string) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	name := f.Name()
	f.Close()
	return name, os.Remove(name)
}

// DriftKind says how a file on disk differs from the generated one.
type DriftKind uint8

// The kinds of drift Compare reports.
const (
	Modified DriftKind = iota // the bytes differ
	Missing                   // the file is not on disk
	Extra                     // an owned file on disk is no longer generated
)

func (k DriftKind) String() string {
	return [...]string{"modified", "missing", "extra"}[k]
}

// Drift is one file that is not as Generate would leave it.
type Drift struct {
	Path string // slash-separated, relative to the spec's directory
	Kind DriftKind
	Diff []byte // unified diff from disk to generated, for Modified
}

// Compare reports how the files under dir differ from the output, sorted by
// path. No drift means the tree is up to date.
func Compare(dir string, out *gen.Output) ([]Drift, error) {
	changes, err := Plan(dir, out)
	if err != nil {
		return nil, err
	}
	data := make(map[string][]byte, len(out.Files))
	for _, f := range out.Files {
		data[f.Path] = f.Data
	}
	drift := make([]Drift, 0, len(changes))
	for _, c := range changes {
		switch c.Kind {
		case Created:
			drift = append(drift, Drift{Path: c.Path, Kind: Missing})
		case Deleted:
			drift = append(drift, Drift{Path: c.Path, Kind: Extra})
		case Updated:
			old, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.Path)))
			if err != nil {
				return nil, err
			}
			drift = append(drift, Drift{Path: c.Path, Kind: Modified, Diff: diff.Diff("a/"+c.Path, old, "b/"+c.Path, data[c.Path])})
		}
	}
	return drift, nil
}

// Move is one file Prune moved.
type Move struct {
	From, To string // slash-separated, relative to the spec's directory
}

// Prune moves the orphan files of a scan, but those in implscan.ImplScan.Kept, out of
// their packages, into impl/_pruned/<package>/ under dir (the spec's
// directory), which the go command ignores; a file already there of the
// same name is kept, and the newcomer gets a numbered name (user_ask.2.go).
// It moves all of them or none, and returns the moves sorted by source.
func Prune(dir string, scan *implscan.ImplScan) (moves []Move, err error) {
	var done []Move
	var createdDirs []string
	defer func() {
		if err == nil {
			return
		}
		for i := len(done) - 1; i >= 0; i-- {
			_ = os.Rename(filepath.Join(dir, filepath.FromSlash(done[i].To)), filepath.Join(dir, filepath.FromSlash(done[i].From)))
		}
		for i := len(createdDirs) - 1; i >= 0; i-- {
			_ = os.Remove(createdDirs[i])
		}
	}()
	for _, from := range scan.Orphans() {
		if _, kept := scan.Kept[from]; kept {
			continue
		}
		toDir := model.PrunedDir + "/" + path.Base(path.Dir(from))
		dirs, err := mkdirAll(filepath.Join(dir, filepath.FromSlash(toDir)))
		createdDirs = append(createdDirs, dirs...)
		if err != nil {
			return nil, fmt.Errorf("pruning %s: %w", from, err)
		}
		base := strings.TrimSuffix(path.Base(from), ".go")
		to := toDir + "/" + base + ".go"
		for n := 2; ; n++ {
			if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(to))); errors.Is(err, fs.ErrNotExist) {
				break
			}
			to = fmt.Sprintf("%s/%s.%d.go", toDir, base, n)
		}
		if err := Rename(filepath.Join(dir, filepath.FromSlash(from)), filepath.Join(dir, filepath.FromSlash(to))); err != nil {
			return nil, fmt.Errorf("pruning %s: %w", from, err)
		}
		done = append(done, Move{From: from, To: to})
	}
	return done, nil
}
