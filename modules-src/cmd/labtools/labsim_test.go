package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/rogpeppe/go-internal/testscript"
)

type simKey struct{}

// simBlock hands each script of this process its own 127.79.N.x block.
var simBlock atomic.Int32

// startSim runs the lab's real API simulator in-process for one script:
// three standalone nodes on loopback addresses outside the labs' range,
// the control API on a Unix socket. It exports $ADDR1..$ADDR3 and $CONTROL.
func startSim(e *testscript.Env) (*pvesim.Sim, error) {
	// One address block per script: scripts run in parallel, and two sims
	// on one block race for ports when a joining node rebinds its own.
	base := fmt.Sprintf("127.79.%d.", (os.Getpid()+int(simBlock.Add(1)))%250+1)
	port, err := freePort(base + "11")
	if err != nil {
		return nil, err
	}
	var nodes []pvesim.NodeConfig
	for i := 1; i <= 3; i++ {
		addr := fmt.Sprintf("%s%d", base, 10+i)
		nodes = append(nodes, pvesim.NodeConfig{Name: fmt.Sprintf("pve0%d", i), Addr: addr})
		e.Setenv(fmt.Sprintf("ADDR%d", i), addr)
	}
	// The scripts run pvesr themselves: the lab's replication minute is an
	// hour, so no scheduler run (aligned to the lab's minute boundaries)
	// falls between a script's pvesr delete and the read that must still
	// find the job marked for removal (it failed so once, under load).
	s, err := pvesim.New(pvesim.Config{Version: 9, Dir: filepath.Join(e.WorkDir, ".lab"), Nodes: nodes, Port: port,
		AuthDelay: -1, TaskDuration: 50 * time.Millisecond, RestartWindow: 50 * time.Millisecond, LockTimeout: time.Second,
		ReplicationInterval: time.Hour})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(ctx); err != nil {
		cancel()
		s.Close()
		return nil, err
	}
	// sun_path is 108 bytes: keep the socket path short.
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		cancel()
		s.Close()
		return nil, err
	}
	sock := filepath.Join(dir, "control.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		cancel()
		s.Close()
		return nil, err
	}
	srv := &http.Server{Handler: s.ControlHandler()}
	go srv.Serve(ln)
	e.Defer(func() { srv.Close(); cancel(); s.Close(); os.RemoveAll(dir) })
	e.Setenv("CONTROL", sock)
	e.Values[simKey{}] = s
	// Answers for `pvecm add` over the API: the root password, then the
	// certificate question.
	pw := s.RootPassword()
	for name, text := range map[string]string{"pw": pw + "\n", "pw-yes": pw + "\nyes\n", "pw-no": pw + "\nno\n", "badpw-yes": "wrong\nyes\n"} {
		if err := os.WriteFile(filepath.Join(e.WorkDir, "answers-"+name), []byte(text), 0o600); err != nil {
			return nil, err
		}
	}
	for i := 1; i <= 3; i++ {
		info, _ := s.Node(fmt.Sprintf("pve0%d", i))
		e.Setenv(fmt.Sprintf("FP%d", i), info.Fingerprint)
	}
	return s, nil
}

func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// simNode is what node.json says about node in the simulated lab.
func simNode(s *pvesim.Sim, control, name string) map[string]any {
	info, ok := s.Node(name)
	if !ok {
		return map[string]any{"control": control}
	}
	id, secret := s.LabToken()
	return map[string]any{"control": control, "address": info.Addr,
		"api": "https://" + net.JoinHostPort(info.Addr, portOf(info.URL)), "api_fingerprint": info.Fingerprint,
		"api_token": id + "=" + secret}
}

func portOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Port() == "" {
		return "8006"
	}
	return p.Port()
}
