// Package sync owns putting generated files on disk and comparing them
// with it: Plan lists the changes, Write makes all of them or none
// (temporary files, then renames, undone on any failure), Compare reports
// modified files with a unified diff, missing and extra ones, and Prune
// moves orphan files out of their packages, all or none. A file at the
// path of an owned file that lacks the generated header was written by a
// person and is never overwritten (ErrNotGenerated).
package sync
