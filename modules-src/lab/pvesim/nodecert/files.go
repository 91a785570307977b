package nodecert

import (
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
)

// What PVE reads back of the certificates in /etc/pve, and the copy of a
// CA for a node removed from its cluster.

// NodeFingerprint is PVE::Cluster::get_node_fingerprint (pve-cluster
// src/PVE/Cluster.pm): the SHA-256 of nodes/<node>/pveproxy-ssl.pem, else
// pve-ssl.pem, in the /etc/pve directory etcPve.
func NodeFingerprint(etcPve, node string) (string, error) {
	dir := filepath.Join(etcPve, "nodes", node)
	p := filepath.Join(dir, "pveproxy-ssl.pem")
	if _, err := os.Stat(p); err != nil {
		p = filepath.Join(dir, "pve-ssl.pem")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		// PVE::Tools::file_get_contents's words.
		return "", fmt.Errorf("can't open '/etc/pve/nodes/%s/%s' - No such file or directory", node, filepath.Base(p))
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return "", fmt.Errorf("unable to read certificate from '/etc/pve/nodes/%s/%s'", node, filepath.Base(p))
	}
	return Fingerprint(block.Bytes), nil
}

// CopyCA copies the root CA of DB from, which signed the certificate of a
// node delnode removed, as the CA of DB to, that node's stale /etc/pve.
func CopyCA(dir, from, to string) error {
	for _, ext := range []string{".pem", ".key"} {
		b, err := os.ReadFile(filepath.Join(CADir(dir), from+ext))
		if err != nil {
			if os.IsNotExist(err) {
				continue // no CA issued yet: the copy creates its own on demand
			}
			return fmt.Errorf("copy the cluster CA for the removed node: %w", err)
		}
		if err := os.WriteFile(filepath.Join(CADir(dir), to+ext), b, 0o600); err != nil {
			return fmt.Errorf("copy the cluster CA for the removed node: %w", err)
		}
	}
	return nil
}
