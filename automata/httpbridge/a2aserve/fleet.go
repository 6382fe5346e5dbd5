package a2aserve

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/moora-go/moora/automata/httpbridge"
)

// FleetFront returns the front-end that serves a Fleet over A2A, for
// httpbridge.FleetConfig.Fronts at a path of its own ("/a2a"): one card,
// one JSON-RPC endpoint, and a task per agent, by the agent's id, under
// the fleet's owner rules. A message without a taskId creates an agent
// owned by its caller (with a contextId, the agent of that id, found when
// it is the caller's); another owner's task is "task not found", word for
// word as one that does not exist. See the package documentation.
func FleetFront[S, I, V any](cfg Config[I, V]) httpbridge.FleetFront[S, I, V] {
	return func(f *httpbridge.Fleet[S, I, V]) (http.Handler, error) {
		if err := cfg.withDefaults(); err != nil {
			return nil, err
		}
		docs, err := readSchema(cfg.Schema)
		if err != nil {
			return nil, fmt.Errorf("a2aserve: Config.Schema: %w", err)
		}
		c, err := newCore(&cfg, docs, f.ClientActors(), f.Decode, make(chan struct{}, cfg.MaxStreams))
		if err != nil {
			return nil, err
		}
		return &handler[S, I, V]{core: c, tasks: fleetTasks[S, I, V]{f}}, nil
	}
}

// fleetTasks are the agents of a Fleet, a task each.
type fleetTasks[S, I, V any] struct{ f *httpbridge.Fleet[S, I, V] }

func (ft fleetTasks[S, I, V]) identify(r *http.Request) *rpcError {
	if _, err := ft.f.Identify(r); err != nil {
		return &rpcError{Code: CodeInvalidRequest, Message: "unauthorized: " + err.Error(), status: http.StatusUnauthorized}
	}
	return nil
}

func (ft fleetTasks[S, I, V]) with(r *http.Request, taskID, contextID string, create bool, fn func(*httpbridge.Bridge[S, I, V], string)) *rpcError {
	id := taskID
	switch {
	case id != "" && contextID != "" && contextID != id:
		return taskNotFound() // a task's context is the task
	case id == "" && !create:
		return taskNotFound()
	case id == "":
		info, _, err := ft.f.CreateAgent(r, contextID)
		if err != nil {
			return fleetError(err)
		}
		id = info.ID
	}
	if err := ft.f.WithAgent(r, id, func(b *httpbridge.Bridge[S, I, V]) { fn(b, id) }); err != nil {
		return fleetError(err)
	}
	return nil
}

// fleetError is the answer to a fleet's refusal: another owner's agent is
// "task not found", as one that does not exist.
func fleetError(err error) *rpcError {
	var fe *httpbridge.FleetError
	if !errors.As(err, &fe) {
		return errorf(CodeInternal, "internal error: %v", err)
	}
	switch fe.Status {
	case http.StatusNotFound:
		return taskNotFound()
	case http.StatusBadRequest:
		return errorf(CodeInvalidParams, "invalid params: %s", fe.Message)
	case http.StatusUnauthorized:
		return &rpcError{Code: CodeInvalidRequest, Message: "unauthorized: " + fe.Message, status: http.StatusUnauthorized}
	}
	return &rpcError{Code: CodeInternal, Message: fe.Message, status: fe.Status, retry: fe.Retry}
}
