//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup makes the program the leader of a process group of its own, so
// that what it starts (npx starts node, say) is stopped with it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends the program's process group SIGTERM, or SIGKILL.
func killGroup(cmd *exec.Cmd, hard bool) {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
