package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/host"
	xssh "golang.org/x/crypto/ssh"
)

var members = []Member{{"pve01", "192.0.2.11"}, {"pve02", "192.0.2.12"}}

// C1: every member gets IP FQDN SHORT, once; a stale line for the same
// name is replaced, not left to fight the new one; a second merge is a no-op.
func TestMergeHostsC1(t *testing.T) {
	cur := "127.0.0.1 localhost\n# keep me\n192.0.2.11 pve01.example.org pve01\n10.9.9.9 pve02\n192.0.2.12 old-name\n"
	got := MergeHosts(cur, members, "example.org")
	want := "127.0.0.1 localhost\n# keep me\n192.0.2.11 pve01.example.org pve01\n192.0.2.12 pve02.example.org pve02\n"
	if got != want {
		t.Fatalf("merged hosts:\n%s\nwant:\n%s", got, want)
	}
	if again := MergeHosts(got, members, "example.org"); again != got {
		t.Fatalf("second merge changed the file (C1 idempotence):\n%s", again)
	}
	if got := MergeHosts("", members, ""); got != "192.0.2.11 pve01\n192.0.2.12 pve02\n" {
		t.Fatalf("without domain: %q", got)
	}
	// An existing line with the right names plus an alias is not fought.
	keep := "192.0.2.11 pve01 pve01.example.org primary\n192.0.2.12 pve02.example.org pve02\n"
	if got := MergeHosts(keep, members, "example.org"); got != keep {
		t.Fatalf("a correct line with an extra alias was rewritten:\n%s", got)
	}
}

func TestKeyPairAndAuthorizedKeysC7(t *testing.T) {
	priv, pub, err := NewKeyPair("root@pve01")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := host.Root(dir)
	write := func(p string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(r.Path(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r.Path(p), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := ReadKeyPair(r); err != nil || got != "" {
		t.Fatalf("no key pair yet: %q %v", got, err)
	}
	write(PrivateKey, priv)
	if _, err := ReadKeyPair(r); err == nil || !strings.Contains(err.Error(), PublicKey) {
		t.Fatalf("half a key pair must be an error naming the missing file: %v", err)
	}
	write(PublicKey, pub)
	got, err := ReadKeyPair(r)
	if err != nil || got != strings.TrimSpace(string(pub)) {
		t.Fatalf("read key pair: %q %v", got, err)
	}
	_, pub2, _ := NewKeyPair("root@pve02")
	if err := os.WriteFile(r.Path(PublicKey), pub2, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyPair(r); err == nil {
		t.Fatal("a public key that does not match the private key must be an error")
	}

	// C7: on a member authorized_keys is a link into /etc/pve/priv; the
	// merge writes through it and keeps the link and the other keys.
	write("/etc/pve/priv/authorized_keys", []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHdUZXTgjBE5jTTc2pgvoyHEiUBGqlTAIo7fk9pekxGn other@node\n"))
	if err := os.Symlink("/etc/pve/priv/authorized_keys", r.Path(AuthorizedKeys)); err != nil {
		t.Fatal(err)
	}
	fc, added, err := PlanAuthorizedKeys(r, []string{string(pub), string(pub2), string(pub)})
	if err != nil || fc == nil || len(added) != 2 {
		t.Fatalf("plan: %v %v %v", fc, added, err)
	}
	if fc.Before.Target != "/etc/pve/priv/authorized_keys" {
		t.Fatalf("planned against %s, want the link's target", fc.Before.Target)
	}
	if _, err := r.ApplyFile(context.Background(), fc, time.Now()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(r.Path(AuthorizedKeys)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the authorized_keys link was replaced (C7): %v", err)
	}
	b, _ := os.ReadFile(r.Path("/etc/pve/priv/authorized_keys"))
	if n := strings.Count(string(b), "\n"); n != 3 || !strings.Contains(string(b), "other@node") {
		t.Fatalf("shared file after merge:\n%s", b)
	}
	if fc, _, _ := PlanAuthorizedKeys(r, []string{string(pub2), string(pub)}); fc != nil {
		t.Fatalf("second merge is not a no-op: %+v", fc)
	}
	if _, _, err := PlanAuthorizedKeys(r, []string{"not a key"}); err == nil {
		t.Fatal("a bad key must be refused")
	}
}

// C3: the known_hosts line is exact: no comment, one line per host and
// key type, a changed key replaced, hashed lines and other hosts kept.
func TestKnownHostsExactC3(t *testing.T) {
	_, pubA, _ := NewKeyPair("")
	_, pubB, _ := NewKeyPair("")
	ka, _ := KeyOf(string(pubA))
	kb, _ := KeyOf(string(pubB))
	names := Names(members[0], "example.org", 22)
	if strings.Join(names, ",") != "192.0.2.11,pve01.example.org,pve01" {
		t.Fatalf("names %v", names)
	}
	h := HostKey{Names: names, Key: ka}
	cur := "|1|hashed= ssh-ed25519 AAAA\n# 192.0.2.11:22 SSH-2.0-OpenSSH_9.2\nother ssh-rsa AAAAB3\n"
	got, _ := MergeKnownHosts(cur, []HostKey{h})
	if strings.Count(got, h.Line()) != 1 || !strings.HasPrefix(got, cur) {
		t.Fatalf("merge:\n%s", got)
	}
	if again, rep := MergeKnownHosts(got, []HostKey{h}); again != got || len(rep) != 0 {
		t.Fatalf("second merge changed known_hosts (C3):\n%s", again)
	}
	// reinstalled peer: its key changes, the line is replaced
	dup := got + "192.0.2.11 " + strings.TrimSpace(string(pubA)) + "\n"
	next, rep := MergeKnownHosts(dup, []HostKey{{Names: names, Key: kb}})
	if strings.Contains(next, strings.Fields(string(pubA))[1]) || strings.Count(next, strings.Fields(string(pubB))[1]) != 1 || len(rep) != 2 {
		t.Fatalf("changed key: replaced %v\n%s", rep, next)
	}
	if n := Names(members[0], "", 2222); strings.Join(n, ",") != "[192.0.2.11]:2222,[pve01]:2222" {
		t.Fatalf("non-standard port: %v", n)
	}
}

func TestFetchHostKey(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := xssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cfg := &xssh.ServerConfig{NoClientAuth: false, PasswordCallback: func(xssh.ConnMetadata, []byte) (*xssh.Permissions, error) {
				return nil, os.ErrPermission
			}}
			cfg.AddHostKey(signer)
			go func() { _, _, _, _ = xssh.NewServerConn(c, cfg); c.Close() }()
		}
	}()
	k, err := FetchHostKey(context.Background(), ln.Addr().String(), xssh.KeyAlgoED25519, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(k.Marshal()) != string(signer.PublicKey().Marshal()) {
		t.Fatal("fetched a different key")
	}
	if _, err := FetchHostKey(context.Background(), "127.0.0.1:1", xssh.KeyAlgoED25519, time.Second); err == nil {
		t.Fatal("no server: want an error")
	}
}
