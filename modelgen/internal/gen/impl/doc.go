// Package impl prints the glue of impl/ from a model (impl/agent, the
// generated files of impl/initials and impl/transitions) and the stubs of
// the hand-written functions a scan of impl/ did not find, from the
// templates of package github.com/moora-go/moora/templates. It is a
// printer: every identifier comes from the model.
package impl
