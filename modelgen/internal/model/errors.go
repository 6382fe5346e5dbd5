package model

import (
	"errors"
	"fmt"

	"golang.org/x/mod/module"
)

// ErrNoPackage is returned by Generate when the model has no package path.
var ErrNoPackage = errors.New("no Go package path for the spec")

// NeedPackage fails with ErrNoPackage when the model has no package path:
// generating code and scanning impl/ need it.
func (m *Model) NeedPackage() error {
	if m.Package == "" {
		return fmt.Errorf("%w: %s; add a package key with the import path of the spec's directory, or put the spec inside a Go module", ErrNoPackage, m.PackageNote)
	}
	return nil
}

// ImportPathError says why p is not an import path the go command accepts,
// or returns "".
func ImportPathError(p string) string {
	err := module.CheckImportPath(p)
	if err == nil {
		return ""
	}
	var ip *module.InvalidPathError
	if errors.As(err, &ip) {
		return ip.Err.Error()
	}
	return err.Error()
}
