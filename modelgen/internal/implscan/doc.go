// Package implscan owns the reading of the hand-written code of impl/: with
// go/parser only, never type-checking, honouring build constraints as the
// go command does, it finds the functions of the model (model.ImplFuncs)
// and reports orphans, wrong signatures, unparsable files and stubs still
// panicking "not implemented", each at its position. It also says which
// orphan files cannot be moved without breaking the build (ImplScan.Kept).
package implscan
