package labctl

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/gopve/proxmox/modules-src/lab/pmxcfs"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// Each node's /etc/pve is a FUSE mount (modules-src/lab/pmxcfs) over the
// simulator's directory of the node's pmxcfs database: before a join every
// node has its own, after it the members see the cluster's one directory,
// and the simulator, the stand-ins and a role editing a file change the same
// files. The mounts live on the host under <lab>/pmxcfs/<node>, exist before
// the nodes start (so each node's mount namespace inherits them and binds
// its own at /etc/pve) and outlive node reboots.

// etcPveMount is the host mount point of node's /etc/pve.
func (l *Lab) etcPveMount(node string) string { return filepath.Join(l.dir, "pmxcfs", node) }

// simBackend adapts the simulator to the mount's Backend.
type simBackend struct{ sim *pvesim.Sim }

func (b simBackend) Dir(node string) string             { return b.sim.EtcPveDir(node) }
func (b simBackend) Quorate(node string) bool           { return b.sim.Quorate(node) }
func (b simBackend) Generated(node, name string) []byte { return b.sim.GeneratedPmxcfsFile(node, name) }
func (b simBackend) Changed(node, rel string)           { b.sim.PmxcfsChanged(node, rel) }

// mountEtcPve mounts every node's /etc/pve on the host.
func (l *Lab) mountEtcPve() error {
	l.etcPve = map[string]*pmxcfs.Server{}
	for i := 1; i <= l.opts.Nodes; i++ {
		name := NodeName(i)
		srv, err := pmxcfs.Mount(l.etcPveMount(name), name, simBackend{l.sim})
		if err != nil {
			return err
		}
		l.etcPve[name] = srv
	}
	return nil
}

// seedEtcPve writes what the installer leaves in a node's own /etc/pve:
// root's authorized_keys (the lab key; /root/.ssh/authorized_keys links
// here, C7) and the node's own host key in known_hosts.
func (l *Lab) seedEtcPve(name, addr string, hostPub []byte) error {
	keys := string(l.key.Public) + " gopve-lab\n"
	known := fmt.Sprintf("%s %s\n%s %s\n", name, trimNL(hostPub), addr, trimNL(hostPub))
	for rel, content := range map[string]string{"priv/authorized_keys": keys, "priv/known_hosts": known} {
		if err := l.sim.WritePmxcfs(name, rel, content, false); err != nil {
			return fmt.Errorf("node %s: writing /etc/pve/%s: %w", name, rel, err)
		}
	}
	return nil
}

func trimNL(b []byte) string {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return string(b)
}

// unmountEtcPve unmounts every node's /etc/pve (the nodes are stopped).
// Callers hold powerMu or run before any power action can.
func (l *Lab) unmountEtcPve() error {
	var errs []error
	for _, srv := range l.etcPve {
		if err := srv.Unmount(); err != nil {
			errs = append(errs, err)
		}
	}
	l.etcPve = nil
	return errors.Join(errs...)
}
