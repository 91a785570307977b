// Command pvesim runs the lab's PVE API simulator on its own, for manual
// exploration with curl, pvesh-like clients or the collection:
//
//	pvesim --version 9 --nodes 3 --slot 7 --dir /tmp/lab7 [--control /tmp/lab7/control.sock]
//
// Node i listens on https://127.77.<slot>.(10+i):8006. The root@pam password
// and the root@pam!lab token are written to <dir>/pvesim/credentials.json
// (mode 0600), never printed. The lab CLI (cmd/lab) embeds the same package
// with real nodes; this command is the simulator alone.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/renameio/v2"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pvesim:", err)
		os.Exit(1)
	}
}

func run() error {
	version := flag.Int("version", 9, "PVE major version to simulate (8 or 9)")
	nodes := flag.Int("nodes", 3, "number of nodes (pve01…)")
	slot := flag.Int("slot", 1, "lab slot S: node i listens on 127.77.S.(10+i)")
	dir := flag.String("dir", "", "lab directory for state and certificates (required)")
	control := flag.String("control", "", "serve the control API on this Unix socket")
	authDelay := flag.Duration("auth-delay", pvesim.DefaultAuthDelay, "delay of every 401 (real PVE: 3s)")
	taskDuration := flag.Duration("task-duration", pvesim.DefaultTaskDuration, "simulated duration of a task")
	flag.Parse()
	if *dir == "" {
		return errors.New("--dir is required (state and certificates live there)")
	}
	if *slot < 1 || *slot > 254 || *nodes < 1 || *nodes > 9 {
		return fmt.Errorf("--slot must be 1..254 and --nodes 1..9 (got %d, %d)", *slot, *nodes)
	}
	cfg := pvesim.Config{Version: *version, Dir: *dir, AuthDelay: *authDelay, TaskDuration: *taskDuration}
	for i := 1; i <= *nodes; i++ {
		cfg.Nodes = append(cfg.Nodes, pvesim.NodeConfig{Name: fmt.Sprintf("pve%02d", i), Addr: fmt.Sprintf("127.77.%d.%d", *slot, 10+i)})
	}
	sim, err := pvesim.New(cfg)
	if err != nil {
		return err
	}
	defer sim.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sim.Start(ctx); err != nil {
		return err
	}
	if err := writeCredentials(sim, *dir); err != nil {
		return err
	}
	if *control != "" {
		_ = os.Remove(*control)
		ln, err := net.Listen("unix", *control)
		if err != nil {
			return fmt.Errorf("control socket %s: %w", *control, err)
		}
		srv := &http.Server{Handler: sim.ControlHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		fmt.Printf("control API on unix:%s\n", *control)
	}
	for _, name := range sim.NodeNames() {
		n, _ := sim.Node(name)
		fmt.Printf("%s %s fingerprint %s\n", n.Name, n.URL, n.Fingerprint)
	}
	fmt.Printf("credentials in %s\n", filepath.Join(*dir, "pvesim", "credentials.json"))
	<-ctx.Done()
	return nil
}

func writeCredentials(sim *pvesim.Sim, dir string) error {
	id, secret := sim.LabToken()
	b, err := json.MarshalIndent(map[string]string{
		"user": "root@pam", "password": sim.RootPassword(), "token_id": id, "token_secret": secret,
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := renameio.WriteFile(filepath.Join(dir, "pvesim", "credentials.json"), b, 0o600); err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	return nil
}
