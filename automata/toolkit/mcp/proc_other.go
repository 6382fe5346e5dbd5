//go:build !unix

package mcp

import "os/exec"

// ownGroup does nothing where there are no process groups.
func ownGroup(*exec.Cmd) {}

// killGroup kills the program (there is no SIGTERM here).
func killGroup(cmd *exec.Cmd, hard bool) {
	_ = cmd.Process.Kill()
}
