package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	sdkclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The turn on Temporal: a workflow of two activities. The workflow's start
// carries the user's input, each activity's result is recorded in the
// history, and the workflow's completion carries the reply.
//
// The server is go.temporal.io/server v1.32.0 built from the Go module (the
// module ./temporalserver, of its own: its dependency graph and moora-go's
// cannot be one, see there) and run as a child process on a SQLite file;
// the SDK's client and worker here talk to it over loopback gRPC, as they
// do to temporaltest's server.

var (
	temporalServerDir  = flag.String("temporal-server", "temporalserver", "directory of the temporalserver module (built with go build)")
	temporalPartitions = flag.Int("temporal-partitions", 0, "task queue partitions of the Temporal server (0: its default, 4)")
)

func ModelActivity(ctx context.Context) (string, error) {
	return `{"tool_call":"lookup","args":{"q":"weather"}}`, nil
}

func ToolActivity(ctx context.Context) (string, error) { return `{"result":"sunny"}`, nil }

func TurnWorkflow(ctx workflow.Context, user string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var model, tool string
	if err := workflow.ExecuteActivity(ctx, ModelActivity).Get(ctx, &model); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, ToolActivity).Get(ctx, &tool); err != nil {
		return "", err
	}
	return "It is sunny.", nil
}

const (
	temporalNamespace = "bench"
	temporalQueue     = "turns"
)

func temporalEngine() engine {
	return engine{
		name:       "Temporal",
		durability: "server v1.32.0 (built from the Go module) on a SQLite file: journal_mode=WAL, synchronous=FULL (fsync at every commit)",
		setup: func(ctx context.Context, dir string, convs int) (func(context.Context, int, int) error, func() error, error) {
			srv, err := startTemporalServer(ctx, dir)
			if err != nil {
				return nil, nil, err
			}
			quiet := sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
			var c sdkclient.Client
			for i := 0; ; i++ { // the frontend takes a moment to serve the namespace
				c, err = sdkclient.Dial(sdkclient.Options{HostPort: srv.hostPort, Namespace: temporalNamespace, Logger: quiet})
				if err == nil {
					if _, err = c.CheckHealth(ctx, nil); err != nil {
						c.Close()
					}
				}
				if err == nil || i == 100 {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if err != nil {
				srv.stop()
				return nil, nil, fmt.Errorf("client: %w", err)
			}
			w := worker.New(c, temporalQueue, worker.Options{})
			w.RegisterWorkflow(TurnWorkflow)
			w.RegisterActivity(ModelActivity)
			w.RegisterActivity(ToolActivity)
			if err := w.Start(); err != nil {
				c.Close()
				srv.stop()
				return nil, nil, err
			}
			run := fmt.Sprintf("%d", time.Now().UnixNano())
			turn := func(ctx context.Context, conv, k int) error {
				wr, err := c.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{
					ID:        fmt.Sprintf("%s-conv-%03d-turn-%d", run, conv, k),
					TaskQueue: temporalQueue,
				}, TurnWorkflow, userText)
				if err != nil {
					return err
				}
				var reply string
				return wr.Get(ctx, &reply)
			}
			teardown := func() error {
				w.Stop()
				c.Close()
				return srv.stop()
			}
			return turn, teardown, nil
		},
	}
}

type temporalServer struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	hostPort string
	exited   chan error
}

var temporalBinary string // built once per run

func buildTemporalServer(ctx context.Context) (string, error) {
	if temporalBinary != "" {
		return temporalBinary, nil
	}
	dir, err := filepath.Abs(*temporalServerDir)
	if err != nil {
		return "", err
	}
	out := filepath.Join(os.TempDir(), "moora-bench-temporalserver")
	fmt.Fprintf(os.Stderr, "  building %s (go build; the first build takes minutes)...\n", dir)
	build := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	build.Dir = dir
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w", dir, err)
	}
	temporalBinary = out
	return out, nil
}

func startTemporalServer(ctx context.Context, dir string) (*temporalServer, error) {
	bin, err := buildTemporalServer(ctx)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-db", filepath.Join(dir, "temporal.db"), "-partitions", fmt.Sprint(*temporalPartitions))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &temporalServer{cmd: cmd, stdin: stdin, exited: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if hp, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- hp
			}
		}
		s.exited <- cmd.Wait()
	}()
	select {
	case s.hostPort = <-ready:
		return s, nil
	case err := <-s.exited:
		return nil, fmt.Errorf("temporalserver exited: %v: %s", err, stderr.String())
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		return nil, errors.New("temporalserver did not start in 2 minutes: " + stderr.String())
	}
}

func (s *temporalServer) stop() error {
	s.stdin.Close()
	select {
	case err := <-s.exited:
		return err
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		return errors.New("temporalserver did not stop in 30s; killed")
	}
}
