package labctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"
)

// pmxcfsFiles are the /etc/pve files a node's own programs read from its
// filesystem (sshd through the /root/.ssh/authorized_keys symlink, ssh
// through /etc/ssh/ssh_known_hosts), while the simulator owns /etc/pve: a
// join swaps them for the cluster's copies (C7) and a node without quorum
// cannot change them (C10).
var pmxcfsFiles = []string{"priv/authorized_keys", "priv/known_hosts"}

// pmxcfsSync mirrors those files between the simulator and each node's
// filesystem, in both directions, until ctx ends. last holds what both
// sides agreed on at the previous pass, so the side that changed wins; a
// node-side change the simulator refuses (no quorum) is rolled back, as a
// read-only /etc/pve would have refused the write.
type pmxcfsSync struct {
	lab  *Lab
	last map[string][]byte // node + "\x00" + path → content
}

func (l *Lab) startPmxcfsSync(ctx context.Context) error {
	s := &pmxcfsSync{lab: l, last: map[string][]byte{}}
	// Seed the simulator with what the installer wrote on each node.
	for _, n := range l.nodes {
		for _, p := range pmxcfsFiles {
			b, err := os.ReadFile(n.node.UpperPath("/etc/pve/" + p))
			if err != nil {
				return fmt.Errorf("node %s: reading /etc/pve/%s: %w", n.info.Name, p, err)
			}
			if err := l.sim.WritePmxcfs(n.info.Name, p, string(b), false); err != nil {
				return fmt.Errorf("node %s: seeding /etc/pve/%s in the simulator: %w", n.info.Name, p, err)
			}
			s.last[n.info.Name+"\x00"+p] = b
		}
	}
	done := make(chan struct{})
	l.syncDone = done
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s.pass()
			}
		}
	}()
	return nil
}

func (s *pmxcfsSync) pass() {
	for _, n := range s.lab.nodes {
		for _, p := range pmxcfsFiles {
			key := n.info.Name + "\x00" + p
			path := n.node.UpperPath("/etc/pve/" + p)
			simText, simOK, err := s.lab.sim.ReadPmxcfs(n.info.Name, p)
			if err != nil {
				continue
			}
			sim := []byte(simText)
			local, localErr := os.ReadFile(path)
			last := s.last[key]
			switch {
			case simOK && !bytes.Equal(sim, last):
				// The simulator changed it (a join): the node sees the new copy.
				if writeInPlace(path, sim) == nil {
					s.last[key] = sim
				}
			case localErr == nil && !bytes.Equal(local, last):
				if err := s.lab.sim.WritePmxcfs(n.info.Name, p, string(local), false); err != nil {
					_ = writeInPlace(path, last) // read-only /etc/pve (C10)
					continue
				}
				s.last[key] = local
			}
		}
	}
}

// writeInPlace rewrites a file of a node's upper layer keeping its inode,
// so the running overlay shows the new content at once (a rename would
// leave the node looking at the old inode).
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
