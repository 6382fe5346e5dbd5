package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(Main()) }

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // invalid spec; for check: drift
	exitBroken  = 2 // usage error; for check: invalid spec or other error
	usageFooter = "run agentgen --help for usage"
)

// exitError carries the exit code of a failed command. A nil err means the
// command already said everything it had to say.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func fail(code int, err error) error { return &exitError{code: code, err: err} }

// Main runs agentgen with the process's arguments and returns its exit code.
func Main() int { return run(os.Args[1:], os.Stdout, os.Stderr) }

func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "agentgen: %v\n", ee.err)
		}
		return ee.code
	}
	// Anything else comes from cobra: an unknown command or flag, or
	// arguments a command does not take.
	footer := usageFooter
	if cmd != nil && cmd != root {
		footer = fmt.Sprintf("run %s --help for usage", cmd.CommandPath())
	}
	fmt.Fprintf(stderr, "agentgen: %v\n%s\n", err, footer)
	return exitBroken
}
