package modelgen

import (
	"github.com/moora-go/moora/modelgen/internal/evolve"
	"github.com/moora-go/moora/modelgen/internal/gen/migrations"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// The version history of a spec, from packages versions and evolve.
type (
	// History is the versions of a spec, oldest first, as the history file
	// beside it keeps them.
	History = versions.History
	// Version is one version of a spec.
	Version = versions.Version
	// VersionPlan is what a history and the spec make: the history to
	// write, and what each step between two versions needs.
	VersionPlan = versions.Plan
	// VersionStep is one step of a VersionPlan.
	VersionStep = versions.Step
	// ShapeChange is one difference between two versions of a spec's data
	// shapes, breaking for replay or compatible.
	ShapeChange = evolve.Change
	// MigrationFinding is a migration that keeps the agent from reading
	// its journal: missing, or still a stub.
	MigrationFinding = migrations.Finding
)

// HistoryFile returns the history file of a spec file: agent.yaml's is
// agent.history.json beside it.
func HistoryFile(specFile string) string { return versions.File(specFile) }

// ReadHistory reads a history file; one that does not exist is an empty
// history.
func ReadHistory(file string) (*History, error) { return versions.Read(file) }

// ParseHistory reads the contents of a history file.
func ParseHistory(file string, data []byte) (*History, error) { return versions.Parse(file, data) }

// PlanVersions plans the history of the spec of m, from the history h read
// beside it: the spec is its newest version, a new one when its data shapes
// changed, or, with amend, the newest one replaced (for a version that no
// agent ran, and so no journal holds).
func PlanVersions(h *History, m *Model, amend bool) (*VersionPlan, error) {
	return versions.NewPlan(h, m, amend)
}

// CompareShapes returns the changes of data shapes from spec old to spec
// new, each breaking for replay or compatible.
func CompareShapes(old, new *Spec) []ShapeChange { return evolve.Compare(old, new) }

// Versions returns the generator of a plan's files: the history file
// (historyFile, relative to the spec's directory), the packages of earlier
// versions that migrations read (decl/v1), impl/agent/versions.go, and a
// stub for each migration to write (impl/migrations/v1_to_v2.go). declared
// are the functions impl/migrations declares (DeclaredMigrations): a state
// migration for a step whose state changed compatibly is optional, and
// used when declared.
func Versions(p *VersionPlan, historyFile string, declared map[string]bool) Generator {
	return migrations.New(p, historyFile, declared)
}

// DeclaredMigrations returns the names of the functions impl/migrations
// under dir, the spec's directory, declares.
func DeclaredMigrations(dir string) (map[string]bool, error) { return migrations.Declared(dir) }

// ScanMigrations reports the migrations of the plan that are missing or
// still stubs in impl/migrations under dir, the spec's directory.
func ScanMigrations(dir string, p *VersionPlan) ([]MigrationFinding, error) {
	return migrations.Scan(dir, p)
}

// MigrationsDir is the directory of the hand-written migrations, relative
// to the spec's directory.
const MigrationsDir = migrations.Dir
