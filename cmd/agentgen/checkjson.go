package main

import (
	"encoding/json"
	"io"
	"path/filepath"

	"github.com/moora-go/moora/modelgen"
)

// checkReport is the check --json report; cmd/agentgen's package doc
// documents it.
type checkReport struct {
	Spec        string           `json:"spec"`
	Status      string           `json:"status"`
	Files       []checkFile      `json:"files"`
	Impl        []implFinding    `json:"impl"`
	Changes     []jsonShape      `json:"changes"`
	Migrations  []implFinding    `json:"migrations"`
	TypeCheck   string           `json:"typeCheck,omitempty"`
	TypeChecked []string         `json:"typeChecked,omitempty"`
	Diagnostics []jsonDiagnostic `json:"diagnostics"`
	Error       string           `json:"error,omitempty"`
}

// jsonShape is a change of data shapes in the check --json report.
type jsonShape struct {
	Since    string `json:"since,omitempty"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Breaking bool   `json:"breaking"`
	Input    string `json:"input,omitempty"`
	Path     string `json:"path"`
	What     string `json:"what"`
	Old      string `json:"old,omitempty"`
	New      string `json:"new,omitempty"`
}

type implFinding struct {
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

type checkFile struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	Diff   string `json:"diff,omitempty"`
}

type jsonDiagnostic struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Severity string `json:"severity"`
	Element  string `json:"element,omitempty"`
	Message  string `json:"message"`
	Hint     string `json:"hint,omitempty"`
}

// printCheckJSON prints the report of check as JSON, and fails with
// check's exit status, having said everything.
func printCheckJSON(w io.Writer, r *modelgen.Report, err error) error {
	out := checkReport{
		Spec: r.Spec, Status: r.Status, TypeCheck: r.TypeCheck, TypeChecked: r.TypeChecked,
		Files: []checkFile{}, Impl: []implFinding{}, Changes: []jsonShape{}, Migrations: []implFinding{},
	}
	if err != nil {
		out.Error = err.Error()
	}
	for _, d := range r.Files {
		out.Files = append(out.Files, checkFile{Path: filepath.ToSlash(d.Path), Status: d.Kind, Diff: string(d.Diff)})
	}
	out.Impl = jsonFindings(out.Impl, r.Findings)
	out.Migrations = jsonFindings(out.Migrations, r.Migrations)
	for _, c := range r.Changes {
		out.Changes = append(out.Changes, jsonShape{
			Since: c.Since, File: c.File, Line: c.Line, Column: c.Col, Breaking: c.Breaking,
			Input: c.Input, Path: c.Path, What: c.What, Old: c.Old, New: c.New,
		})
	}
	ds := r.Diagnostics
	if len(r.History) > 0 {
		ds = r.History
	}
	out.Diagnostics = make([]jsonDiagnostic, 0, len(ds))
	for _, d := range ds {
		out.Diagnostics = append(out.Diagnostics, jsonDiagnostic{
			File: d.File, Line: d.Line, Column: d.Col, Severity: severity(d.Warning),
			Element: d.Element, Message: d.Message, Hint: d.Hint,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if encErr := enc.Encode(out); encErr != nil {
		return fail(exitBroken, encErr)
	}
	if code := checkExit(r.Status); code != exitOK {
		return fail(code, nil)
	}
	return nil
}

func jsonFindings(out []implFinding, fs []modelgen.Finding) []implFinding {
	for _, f := range fs {
		out = append(out, implFinding{
			Path: filepath.ToSlash(f.Path), Line: f.Line, Column: f.Col,
			Kind: f.Kind, Severity: severity(f.Warning), Message: f.Message,
		})
	}
	return out
}

func severity(warning bool) string {
	if warning {
		return "warning"
	}
	return "error"
}
