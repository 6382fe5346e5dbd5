package mcp_test

import (
	"log"

	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/automata/toolkit/mcp"
)

// Mounting the reference server's tools in a kit: Mount returns at once,
// and the server's tools join the kit once it has listed them. (Not run:
// it starts npx.)
func ExampleMount() {
	kit, err := toolkit.New(toolkit.Config{})
	if err != nil {
		log.Fatal(err)
	}
	everything, err := mcp.Mount(kit, mcp.Config{Name: "everything",
		Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}})
	if err != nil {
		log.Fatal(err)
	}
	defer everything.Close()
	_ = kit.LLMTools() // what the model is shown: the kit's tools, the server's among them once listed
}
