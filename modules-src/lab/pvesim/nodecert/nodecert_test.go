package nodecert

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// A node's certificate is signed by its DB's root CA, survives a restart
// (the same generation loads the same certificate) and is replaced by the
// next generation, whose predecessor's files are gone.
func TestCertSignedByCAAndKeptPerGeneration(t *testing.T) {
	dir := t.TempDir()
	ca, err := LoadOrCreateCA(dir, "db1")
	if err != nil {
		t.Fatal(err)
	}
	c0, err := LoadOrCreate(dir, "pve01", "10.0.0.1", 0, ca)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c0.TLS.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "pve01"}); err != nil {
		t.Errorf("pve-ssl.pem does not verify against pve-root-ca.pem: %v", err)
	}
	if !regexp.MustCompile(`^([0-9A-F]{2}:){31}[0-9A-F]{2}$`).MatchString(c0.Fingerprint) {
		t.Errorf("fingerprint %q is not PVE's upper-case colon-separated SHA-256", c0.Fingerprint)
	}
	again, err := LoadOrCreate(dir, "pve01", "10.0.0.1", 0, ca)
	if err != nil || again.Fingerprint != c0.Fingerprint {
		t.Errorf("generation 0 reloaded as %v (%v), want %s", again, err, c0.Fingerprint)
	}
	c1, err := LoadOrCreate(dir, "pve01", "10.0.0.1", 1, ca)
	if err != nil || c1.Fingerprint == c0.Fingerprint {
		t.Fatalf("generation 1: %v %v", c1, err)
	}
	if _, err := os.Stat(filepath.Join(Dir(dir, "pve01"), "pve-ssl.0.pem")); !os.IsNotExist(err) {
		t.Errorf("generation 0's certificate is still there: %v", err)
	}
	ca2, err := LoadOrCreateCA(dir, "db1")
	if err != nil || string(ca2.PEM) != string(ca.PEM) {
		t.Errorf("the CA was not kept: %v", err)
	}
	RemoveCA(dir, "db1")
	if ca3, err := LoadOrCreateCA(dir, "db1"); err != nil || string(ca3.PEM) == string(ca.PEM) {
		t.Errorf("a removed CA came back: %v", err)
	}
}
