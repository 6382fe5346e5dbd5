package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5"
)

// The turn on DBOS: a workflow of two steps. DBOS records the workflow's
// start (its input) in workflow_status, each step's output in
// operation_outputs, and the workflow's result (the reply) in
// workflow_status: four durable writes, each a committed PostgreSQL
// transaction.

func modelStep(ctx context.Context) (string, error) {
	return `{"tool_call":"lookup","args":{"q":"weather"}}`, nil
}

func toolStep(ctx context.Context) (string, error) { return `{"result":"sunny"}`, nil }

func dbosTurn(ctx dbos.Context, user string) (string, error) {
	if _, err := dbos.RunAsStep(ctx, modelStep, dbos.WithStepName("model")); err != nil {
		return "", err
	}
	if _, err := dbos.RunAsStep(ctx, toolStep, dbos.WithStepName("tool")); err != nil {
		return "", err
	}
	return "It is sunny.", nil
}

func dbosEngine() engine {
	return engine{
		name:       "DBOS",
		durability: "PostgreSQL 15 (own cluster): fsync=on, synchronous_commit=on, full_page_writes=on",
		setup: func(ctx context.Context, dir string, convs int) (func(context.Context, int, int) error, func() error, error) {
			pg, err := startPostgres()
			if err != nil {
				return nil, nil, err
			}
			if err := pg.checkDurability(ctx); err != nil {
				pg.stop()
				return nil, nil, err
			}
			dctx, err := dbos.NewContext(ctx, dbos.Config{
				AppName:     "bench-engines",
				DatabaseURL: pg.url("dbos_bench"),
				Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			if err != nil {
				pg.stop()
				return nil, nil, err
			}
			dbos.RegisterWorkflow(dctx, dbosTurn)
			if err := dbos.Launch(dctx); err != nil {
				pg.stop()
				return nil, nil, err
			}
			run := fmt.Sprintf("%d", time.Now().UnixNano())
			turn := func(ctx context.Context, c, k int) error {
				h, err := dbos.RunWorkflow(dctx, dbosTurn, userText, dbos.WithWorkflowID(fmt.Sprintf("%s-conv-%03d-turn-%d", run, c, k)))
				if err != nil {
					return err
				}
				_, err = h.GetResult()
				return err
			}
			teardown := func() error {
				err := dbos.Shutdown(dctx, 10*time.Second)
				return errors.Join(err, pg.stop())
			}
			return turn, teardown, nil
		},
	}
}

// postgres is a PostgreSQL cluster of the harness's own, in a temporary
// directory, listening on a unix socket there only.
type postgres struct {
	bin, data, sock string
	user            string // the cluster's superuser (and the OS user it runs as)
	runAs           []string
}

func (p *postgres) url(db string) string {
	return fmt.Sprintf("postgres://%s@/%s?host=%s&sslmode=disable", p.user, db, p.sock)
}

func findPGBin() (string, error) {
	if path, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			return filepath.Dir(real), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("no PostgreSQL server found (pg_ctl): apt-get install -y postgresql")
}

func startPostgres() (*postgres, error) {
	bin, err := findPGBin()
	if err != nil {
		return nil, err
	}
	// A short path: a unix socket's path is limited to about 100 bytes.
	base, err := os.MkdirTemp("", "pg")
	if err != nil {
		return nil, err
	}
	p := &postgres{bin: bin, data: filepath.Join(base, "data"), sock: base, user: "postgres"}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: run it as the postgres user
		// of Debian's package.
		if err := exec.Command("chown", "postgres:postgres", base).Run(); err != nil {
			return nil, fmt.Errorf("chown %s postgres: %w", base, err)
		}
		p.runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	if out, err := p.cmd("initdb", "-D", p.data, "-U", p.user, "-A", "trust", "-E", "UTF8", "--no-instructions").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	opts := strings.Join([]string{
		"-c fsync=on",
		"-c synchronous_commit=on",
		"-c full_page_writes=on",
		"-c listen_addresses=''",
		"-c unix_socket_directories=" + p.sock,
		"-c max_connections=200",
	}, " ")
	if out, err := p.cmd("pg_ctl", "-D", p.data, "-l", filepath.Join(base, "log"), "-o", opts, "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(base, "log"))
		return nil, fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return p, nil
}

func (p *postgres) cmd(name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, p.runAs...), filepath.Join(p.bin, name)), args...)
	return exec.Command(argv[0], argv[1:]...)
}

func (p *postgres) stop() error {
	out, err := p.cmd("pg_ctl", "-D", p.data, "-m", "fast", "-w", "stop").CombinedOutput()
	os.RemoveAll(p.sock)
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	return nil
}

// checkDurability reads back the settings the cluster runs with.
func (p *postgres) checkDurability(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, p.url("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
		var v string
		if err := conn.QueryRow(ctx, "SHOW "+s).Scan(&v); err != nil {
			return err
		}
		if v != "on" {
			return fmt.Errorf("postgres runs with %s=%s, not on", s, v)
		}
	}
	return nil
}
