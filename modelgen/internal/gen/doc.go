// Package gen owns what the printers share: the File and Output they
// produce, the Generator interface and Generate, which runs generators one
// after the other, rendering with jennifer and gofmt'ing in memory (Render,
// FormatSource, which shows unparsable source with line numbers), the doc
// comment helpers, the import paths generated code refers to, and the
// text/template sources of stubs and the starter (RenderTemplate).
//
// The printers live below it, one package per file set: decl (the decl/
// package), impl (the glue of impl/ and the stubs of hand-written code) and
// graph (the actor graph). Printers only print a model.Model: they report no
// diagnostics and build no identifier; a name they need that the model does
// not carry is a field the model lacks.
package gen
