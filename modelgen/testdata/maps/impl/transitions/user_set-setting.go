package transitions

import "example.com/golden/maps/decl"

// SetSetting applies input set-setting, dispatched by actor user, to the
// actor's state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append with automata.Append, copy a map before changing it.
func SetSetting(state decl.StateOfUser, input decl.SetSetting) decl.StateOfUser {
	panic("not implemented: user/set-setting")
}
