package labctl

import (
	"context"
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// startSimulator starts the PVE API simulator on every node's :8006 and takes
// the lab's credentials and the nodes' certificate fingerprints from it.
func (l *Lab) startSimulator(ctx context.Context) error {
	cfg := pvesim.Config{Version: l.opts.PVE, Dir: l.dir}
	l.storageHooks(&cfg)
	for i := 1; i <= l.opts.Nodes; i++ {
		cfg.Nodes = append(cfg.Nodes, pvesim.NodeConfig{Name: NodeName(i), Addr: NodeAddr(l.slot, i)})
	}
	if l.opts.SimConfig != nil {
		l.opts.SimConfig(&cfg)
	}
	sim, err := pvesim.New(cfg)
	if err != nil {
		return fmt.Errorf("creating the PVE API simulator: %w", err)
	}
	// The simulator outlives Start's context: it stops with Close.
	if err := sim.Start(context.WithoutCancel(ctx)); err != nil {
		_ = sim.Close()
		return fmt.Errorf("starting the PVE API simulator: %w", err)
	}
	l.sim = sim
	id, secret := sim.LabToken()
	l.creds = Credentials{User: "root@pam", Password: sim.RootPassword(), TokenID: id, TokenSecret: secret,
		Port: pvesim.DefaultPort, Fingerprints: map[string]string{}}
	for _, n := range cfg.Nodes {
		info, ok := sim.Node(n.Name)
		if !ok {
			return fmt.Errorf("the simulator does not know node %s", n.Name)
		}
		l.creds.Fingerprints[n.Name] = info.Fingerprint
	}
	return nil
}

// Sim is the lab's PVE API simulator, for tests that inject faults, read
// the request log or switch nodes off.
func (l *Lab) Sim() *pvesim.Sim { return l.sim }
