// Package provider is what the providers of package automata/llm share,
// whatever their SDK: the limits on what one call takes from a server (a
// watch of its time, and a response body that counts its bytes and the
// bytes of each server-sent event), and the text of an error (one line, and
// the wait a server asks for), and the check of a request's images against
// what a vendor's API takes of them (ImageLimits). Each provider documents the limits as its
// own: package automata/llm/openai has the whole account of them.
package provider
