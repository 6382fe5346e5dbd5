// Package model owns the IR of modelgen: the plain data between a valid
// spec and the printers. Build checks a schema-valid spec (package spec)
// and derives its Model:
//
//   - types resolved: $defs, inline objects, enums and oneOfs named, each
//     a TypeDecl; allOf merged; cycles by value rejected;
//   - the model rules checked: actors, observations, inputs, a property
//     owned by one actor, with one schema;
//   - StateOf, ContextOf and AgentState derived, in a deterministic order;
//   - every Go identifier chosen once (Actor.Idents, TypeDecl.GoName,
//     Field.GoName, the Marker and Decoder of a oneOf, the hand-written
//     functions of ImplFuncs and their files) and checked for clashes,
//     Go keywords and predeclared names: the checks that need Go names
//     live here;
//   - the JSON Schema generated code validates inputs with (InputSchema),
//     compiled once as generated code compiles it;
//   - the methodology's lint, as warnings.
//
// Printers (package gen and below) only print a Model: when one needs a
// name the Model does not carry, the Model lacks a field.
package model
