//go:build !unix

package main

// openNonblock is 0 where there is no O_NONBLOCK.
const openNonblock = 0
