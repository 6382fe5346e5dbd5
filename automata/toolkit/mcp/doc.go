// Package mcp mounts the tools of a Model Context Protocol server in a
// toolkit: over stdio (a program the Server starts and supervises) or over
// Streamable HTTP (a URL). Its tools become the kit's, under every guard of
// a Go tool.
package mcp
