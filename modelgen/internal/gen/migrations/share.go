package migrations

import (
	"slices"

	"github.com/moora-go/moora/modelgen/internal/model"
)

// Shared returns the Go names of the declared types of old that are the
// same in next, the following version: the same kind, name, fields (their
// JSON names, Go names, tags and types), enum values or target, with every
// type they refer to shared too. Version old's package declares each as an
// alias of next's, so that a type unchanged since version 1 is one Go type
// and a migration assigns it as it is.
//
// Unions, their variants, inputs and types that decode sealed interfaces
// are never shared: each version's package seals its own interfaces.
func Shared(old, next *model.Model) map[string]bool {
	news := make(map[string]*model.TypeDecl, len(next.Types))
	for _, d := range next.Types {
		news[d.GoName] = d
	}
	shared := make(map[string]bool)
	for _, d := range old.Types {
		if n := news[d.GoName]; n != nil && shareable(d) && shareable(n) {
			shared[d.GoName] = true
		}
	}
	// Drop the candidates that differ, then those that refer to a dropped
	// one, until none is dropped.
	for changed := true; changed; {
		changed = false
		for _, d := range old.Types {
			if shared[d.GoName] && !sameDecl(d, news[d.GoName], shared) {
				delete(shared, d.GoName)
				changed = true
			}
		}
	}
	return shared
}

// shareable says whether d may be an alias of another package's type.
func shareable(d *model.TypeDecl) bool {
	return d.Kind != model.UnionDecl && len(d.Unions) == 0 && d.Input == nil && !d.NeedsUnmarshal()
}

// sameDecl says whether a and b declare the same Go type, given the types
// shared so far.
func sameDecl(a, b *model.TypeDecl, shared map[string]bool) bool {
	if a.Kind != b.Kind || a.GoName != b.GoName {
		return false
	}
	switch a.Kind {
	case model.StructDecl:
		return slices.EqualFunc(a.Fields, b.Fields, func(x, y *model.Field) bool {
			return x.Name == y.Name && x.GoName == y.GoName && x.Tag() == y.Tag() && sameType(x.Type, y.Type, shared)
		}) && slices.EqualFunc(a.Consts, b.Consts, func(x, y *model.ConstProp) bool {
			return x.Name == y.Name && x.GoName == y.GoName && string(x.Value) == string(y.Value)
		})
	case model.EnumDecl:
		return slices.EqualFunc(a.Values, b.Values, func(x, y *model.EnumValue) bool {
			return x.Value == y.Value && x.GoName == y.GoName
		})
	case model.AliasDecl, model.DefinedDecl:
		return sameType(a.Target, b.Target, shared)
	}
	return false
}

// sameType says whether a and b are the same Go type, given the declared
// types shared (by name).
func sameType(a, b *model.Type, shared map[string]bool) bool {
	if a == nil || b == nil || a.Kind != b.Kind {
		return a == nil && b == nil
	}
	switch a.Kind {
	case model.NamedType:
		return a.Decl.GoName == b.Decl.GoName && shared[a.Decl.GoName]
	case model.SliceType, model.MapType, model.PointerType:
		return sameType(a.Elem, b.Elem, shared)
	}
	return true
}
