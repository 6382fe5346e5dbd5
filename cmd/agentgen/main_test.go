package main

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/moora-go/moora/modelgen"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the expected output in the test scripts")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"agentgen": func() { os.Exit(Main()) },
	})
}

// TestScripts runs the CLI scenarios in testdata/script/*.txtar with agentgen
// in-process. -update rewrites the files the scripts compare with.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
	})
}

// TestSchemaCommand checks that agentgen schema prints the spec schema byte
// for byte.
func TestSchemaCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"schema"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.Bytes())
	}
	if !bytes.Equal(stdout.Bytes(), modelgen.SpecSchema()) {
		t.Error("agentgen schema differs from modelgen.SpecSchema()")
	}
}
