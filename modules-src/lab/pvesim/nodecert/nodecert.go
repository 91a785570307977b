// Package nodecert is a node's pve-ssl certificate and the root CA of its
// /etc/pve, as pve-cluster's PVE::Cluster::Setup makes them (src/PVE/Cluster/
// Setup.pm: gen_pveca_cert, gen_pve_ssl_cert; pve-root-ca.pem signs each
// node's pve-ssl.pem), the fingerprint PVE shows for one, and
// get_node_fingerprint's read of it from /etc/pve (src/PVE/Cluster.pm;
// files.go).
//
// Reconstruction: ECDSA P-256 keys instead of PVE's RSA keep lab creation
// fast; subjects and lifetimes are close to PVE's, not copied. The files
// live under the lab's state directory, not in /etc/pve.
package nodecert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/renameio/v2"
)

// Cert is a node's pve-ssl certificate, signed by its /etc/pve's root
// CA (pve-root-ca.pem) as on real PVE. ECDSA instead of PVE's RSA keeps lab
// creation fast; clients see the same thing: a certificate to pin by SHA-256
// or to verify against the cluster's CA (K14).
type Cert struct {
	TLS         tls.Certificate
	PEM         []byte // the certificate, as pve-ssl.pem
	Fingerprint string // its SHA-256, as PVE shows it
}

// CA is the pve-root-ca of one /etc/pve (ConfigDB): a join gives the
// joiner the cluster's CA and a new certificate signed by it.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte // the certificate, as pve-root-ca.pem
}

// Dir holds the certificates of node (pve-ssl.<gen>.pem and .key) under the
// lab's state directory dir; CADir holds each DB's <id>.pem and <id>.key.
func Dir(dir, node string) string { return filepath.Join(dir, "pvesim", "nodes", node) }

// CADir: see Dir.
func CADir(dir string) string { return filepath.Join(dir, "pvesim", "ca") }

// LoadOrCreateCA returns the root CA of DB dbID, creating it when missing.
func LoadOrCreateCA(dir, dbID string) (*CA, error) {
	certPath := filepath.Join(CADir(dir), dbID+".pem")
	keyPath := filepath.Join(CADir(dir), dbID+".key")
	certPEM, errC := os.ReadFile(certPath)
	keyPEM, errK := os.ReadFile(keyPath)
	if errC != nil || errK != nil {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate root CA key: %w", err)
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(time.Now().UnixNano()),
			Subject:               pkix.Name{CommonName: "Proxmox Virtual Environment", OrganizationalUnit: []string{dbID}, Organization: []string{"PVE Cluster Manager CA"}},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().AddDate(10, 0, 0),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return nil, fmt.Errorf("create root CA: %w", err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("encode root CA key: %w", err)
		}
		certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
		if err := os.MkdirAll(CADir(dir), 0o700); err != nil {
			return nil, fmt.Errorf("create CA dir: %w", err)
		}
		if err := renameio.WriteFile(keyPath, keyPEM, 0o600); err != nil {
			return nil, fmt.Errorf("write root CA key: %w", err)
		}
		if err := renameio.WriteFile(certPath, certPEM, 0o644); err != nil {
			return nil, fmt.Errorf("write root CA: %w", err)
		}
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("root CA in %s is unreadable (delete the lab to start over)", CADir(dir))
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse root CA: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse root CA key: %w", err)
	}
	return &CA{cert: cert, key: key, PEM: certPEM}, nil
}

// RemoveCA deletes the root CA of DB dbID.
func RemoveCA(dir, dbID string) {
	_ = os.Remove(filepath.Join(CADir(dir), dbID+".pem"))
	_ = os.Remove(filepath.Join(CADir(dir), dbID+".key"))
}

// LoadOrCreate returns the node's certificate of generation gen,
// creating it (signed by ca) and persisting it when missing: restarts keep
// it, a join (which bumps gen) replaces it (pitfall C5).
func LoadOrCreate(dir, node, addr string, gen int, ca *CA) (*Cert, error) {
	d := Dir(dir, node)
	certPath := filepath.Join(d, fmt.Sprintf("pve-ssl.%d.pem", gen))
	keyPath := filepath.Join(d, fmt.Sprintf("pve-ssl.%d.key", gen))
	certPEM, errC := os.ReadFile(certPath)
	keyPEM, errK := os.ReadFile(keyPath)
	if errC != nil || errK != nil {
		if !errors.Is(errC, os.ErrNotExist) && errC != nil {
			return nil, fmt.Errorf("read certificate of %s: %w", node, errC)
		}
		var err error
		certPEM, keyPEM, err = generateCert(node, addr, ca)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create certificate dir of %s: %w", node, err)
		}
		if err := renameio.WriteFile(keyPath, keyPEM, 0o600); err != nil {
			return nil, fmt.Errorf("write key of %s: %w", node, err)
		}
		if err := renameio.WriteFile(certPath, certPEM, 0o644); err != nil {
			return nil, fmt.Errorf("write certificate of %s: %w", node, err)
		}
		// The previous generation is of no use once replaced.
		if gen > 0 {
			_ = os.Remove(filepath.Join(d, fmt.Sprintf("pve-ssl.%d.pem", gen-1)))
			_ = os.Remove(filepath.Join(d, fmt.Sprintf("pve-ssl.%d.key", gen-1)))
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate of %s in %s is unusable (delete it to regenerate): %w", node, d, err)
	}
	return &Cert{TLS: pair, PEM: certPEM, Fingerprint: Fingerprint(pair.Certificate[0])}, nil
}

// Fingerprint formats the SHA-256 of a DER certificate as PVE does:
// upper-case hex pairs joined by colons.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}

func generateCert(node, addr string, ca *CA) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key for %s: %w", node, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, nil, fmt.Errorf("generate serial for %s: %w", node, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: node + ".lab", Organization: []string{"PVE Cluster Node"}, OrganizationalUnit: []string{"PVE Cluster Node"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(2, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{node, node + ".lab", "localhost"},
	}
	if ip := net.ParseIP(addr); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate for %s: %w", node, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key for %s: %w", node, err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}
