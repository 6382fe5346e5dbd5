// Package graph prints the actor graph of a model, in Mermaid or Graphviz
// dot: a node per actor with its state and context, an edge per
// observation with the observed properties.
package graph
