package initials

import "example.com/golden/three-actors/decl"

// TaskManager returns the initial state of actor task-manager.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure: no clock, no randomness, no I/O.
func TaskManager() decl.StateOfTaskManager {
	panic("not implemented: initial state of task-manager")
}
