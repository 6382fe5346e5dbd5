// Command temporalserver runs a Temporal server (go.temporal.io/server
// v1.32.0, all four services in this one process) on a SQLite file, with the
// namespace "bench", for the engines benchmark. It is a module of its own:
// the server's dependency graph (OpenTelemetry v1.44, whose otel/log API
// v1.47 dropped) cannot share one with moora-go's (OpenTelemetry v1.47).
//
//	temporalserver -db path/temporal.db
//
// It prints "READY host:port" on stdout once the frontend serves, and stops
// when its stdin closes or on SIGTERM/SIGINT.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/testing/freeport"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const temporalNamespace = "bench"

// sqlitePragmas: WAL, and an fsync of the WAL at every commit.
var sqlitePragmas = map[string]string{"journal_mode": "wal", "synchronous": "FULL"}

func main() {
	db := flag.String("db", "", "the SQLite file (created with the schema if it does not exist)")
	partitions := flag.Int("partitions", 0, "task queue partitions (0: the server's default, 4)")
	flag.Parse()
	if *db == "" {
		fmt.Fprintln(os.Stderr, "temporalserver: -db is required")
		os.Exit(2)
	}
	srv, hostPort, err := startTemporal(*db, *partitions)
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporalserver:", err)
		os.Exit(1)
	}
	// journal_mode=wal is kept in the file: its WAL exists once the server
	// has written (synchronous is a setting of each connection, in the DSN).
	if _, err := os.Stat(*db + "-wal"); err != nil {
		fmt.Fprintln(os.Stderr, "temporalserver: the SQLite file is not in WAL mode:", err)
		os.Exit(1)
	}
	fmt.Printf("READY %s\n", hostPort)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	eof := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-stop:
	case <-eof:
	}
	done := make(chan error, 1)
	go func() { done <- srv.Stop() }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		err = errors.New("stop timed out")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporalserver: stop:", err)
		os.Exit(1)
	}
}

// startTemporal starts a Temporal server in the process on the SQLite file
// at path, with the namespace "bench", as go.temporal.io/server's
// temporaltest does (whose server is in memory): the configuration is that
// of its internal LiteServer, with a file on disk.
func startTemporal(path string, partitions int) (temporal.Server, string, error) {
	sqlCfg := config.SQL{
		PluginName:        sqliteplugin.PluginName,
		DatabaseName:      path,
		ConnectAttributes: map[string]string{"mode": "rwc"},
	}
	for k, v := range sqlitePragmas {
		sqlCfg.ConnectAttributes[k] = v
	}
	const ip = "127.0.0.1"
	frontendPort := freeport.MustGetFreePort()
	service := func(port int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: port, MembershipPort: freeport.MustGetFreePort(), BindOnIP: ip}}
	}
	cfg := &config.Config{}
	cfg.Global.Membership = config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: ip}
	cfg.Global.Metrics = &metrics.Config{Prometheus: &metrics.PrometheusConfig{
		ListenAddress: fmt.Sprintf("%s:%d", ip, freeport.MustGetFreePort()), HandlerPath: "/metrics",
	}}
	cfg.Global.PProf = config.PProf{Port: freeport.MustGetFreePort()}
	cfg.Persistence = config.Persistence{
		DefaultStore:     sqliteplugin.PluginName,
		VisibilityStore:  sqliteplugin.PluginName,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: &sqlCfg}},
	}
	cfg.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        "active",
		CurrentClusterName:       "active",
		ClusterInformation: map[string]cluster.ClusterInformation{
			"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: fmt.Sprintf("%s:%d", ip, frontendPort)},
		},
	}
	cfg.DCRedirectionPolicy = config.DCRedirectionPolicy{Policy: "noop"}
	cfg.Services = map[string]config.Service{
		"frontend": service(frontendPort),
		"history":  service(freeport.MustGetFreePort()),
		"matching": service(freeport.MustGetFreePort()),
		"worker":   service(freeport.MustGetFreePort()),
	}
	cfg.Archival = config.Archival{
		History:    config.HistoryArchival{State: "disabled"},
		Visibility: config.VisibilityArchival{State: "disabled"},
	}
	cfg.PublicClient = config.PublicClient{HostPort: fmt.Sprintf("%s:%d", ip, frontendPort)}
	cfg.NamespaceDefaults = config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
		History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
		Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
	}}

	if err := sqlite.SetupSchema(&sqlCfg); err != nil {
		return nil, "", fmt.Errorf("temporal schema: %w", err)
	}
	ns, err := sqlite.NewNamespaceConfig("active", temporalNamespace, false, nil)
	if err != nil {
		return nil, "", err
	}
	if err := sqlite.CreateNamespaces(&sqlCfg, ns); err != nil {
		return nil, "", fmt.Errorf("temporal namespace: %w", err)
	}
	logger := log.NewNoopLogger()
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, "", err
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return nil, "", err
	}
	dyn := dynamicconfig.StaticClient{}
	if partitions > 0 {
		dyn[dynamicconfig.MatchingNumTaskqueueReadPartitions.Key()] = []dynamicconfig.ConstrainedValue{{Value: partitions}}
		dyn[dynamicconfig.MatchingNumTaskqueueWritePartitions.Key()] = []dynamicconfig.ConstrainedValue{{Value: partitions}}
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dyn),
	)
	if err != nil {
		return nil, "", fmt.Errorf("temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, "", errors.Join(fmt.Errorf("temporal start: %w", err), srv.Stop())
	}
	return srv, cfg.PublicClient.HostPort, nil
}
