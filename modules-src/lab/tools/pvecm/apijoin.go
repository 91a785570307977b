package pvecm

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/control"
	"golang.org/x/sys/unix"
)

// Directory is the lab's node list (control.Client implements it), used to
// find which node answers at the address `pvecm add HOST` names.
type Directory interface {
	Nodes(ctx context.Context) ([]control.NodeInfo, error)
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// readLine reads what PVE::PTY::read_password reads when stdin is not a
// terminal: one line, EOF being an error.
func readLine(r *bufio.Reader) (string, bool) {
	s, err := r.ReadString('\n')
	if err != nil && s == "" {
		return "", false
	}
	return strings.TrimRight(s, "\r\n"), true
}

// apiJoin is `pvecm add HOST` without --use_ssh: the peer's root password
// (read from stdin without a terminal, as real pvecm does), the peer's API
// certificate (pinned by --fingerprint or confirmed on stdin), a login, and
// the join request. Under automation with nothing on stdin it fails with
// real pvecm's "EOF while reading password".
func (t *Tool) apiJoin(ctx context.Context, host string, opts map[string]string) int {
	in := bufio.NewReader(t.Env.Stdin)
	prompt := fmt.Sprintf("Please enter superuser (root) password for '%s': ", host)
	if isTerminal(t.Env.Stdin) {
		t.Env.Errf("%s", prompt)
	}
	password, ok := readLine(in)
	if !ok {
		return t.die("EOF while reading password")
	}
	t.Env.Outf("Establishing API connection with host '%s'\n", host)
	dir, ok := t.Cluster.(Directory)
	if !ok {
		return t.die("lab pvecm: no node directory to reach '%s'", host)
	}
	nodes, err := dir.Nodes(ctx)
	if err != nil {
		return t.die("%v", err)
	}
	var peer *control.NodeInfo
	for i := range nodes {
		if nodes[i].Addr == host || nodes[i].Name == host {
			peer = &nodes[i]
		}
	}
	port := "8006"
	if u, err := url.Parse(t.Node.API); err == nil && u.Port() != "" {
		port = u.Port()
	}
	if peer == nil || !peer.Online {
		return t.die("500 Can't connect to %s (Connection refused)", net.JoinHostPort(host, port))
	}
	want := strings.ToUpper(opts["fingerprint"])
	if want == "" {
		t.Env.Outf("The authenticity of host '%s' can't be established.\nX509 SHA256 key fingerprint is %s.\nAre you sure you want to continue connecting (yes/no)? ", host, peer.Fingerprint)
		answer, _ := readLine(in)
		t.Env.Outf("\n")
		if strings.ToLower(strings.TrimSpace(answer)) != "yes" {
			return t.die("500 Can't connect to %s (certificate verify failed)", net.JoinHostPort(host, port))
		}
		want = strings.ToUpper(peer.Fingerprint)
	}
	if err := login(ctx, net.JoinHostPort(peer.Addr, port), password, want); err != nil {
		return t.die("%v", err)
	}
	t.Env.Outf("Login succeeded.\ncheck cluster join API version\n")
	link0 := t.link0(opts)
	if opts["link0"] == "" {
		t.Env.Outf("No cluster network links passed explicitly, fallback to local node IP '%s'\n", link0)
	}
	t.Env.Outf("Request addition of this node\n")
	if _, err := t.Cluster.AddNodeEntry(ctx, peer.Name, t.Node.Node, link0, opts["force"] == "1"); err != nil {
		return t.die("An error occurred on the cluster node: %v\nCluster join aborted!", err)
	}
	t.Env.Outf("Join request OK, finishing setup locally\n")
	return t.finishJoin(ctx)
}

// login is PVE::APIClient::LWP's login: POST /access/ticket as root@pam
// over TLS pinned to the fingerprint.
func login(ctx context.Context, hostport, password, fingerprint string) error {
	fp := strings.ReplaceAll(fingerprint, ":", "")
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, // pinned below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("no certificate")
			}
			sum := sha256.Sum256(raw[0])
			if fmt.Sprintf("%X", sum[:]) != fp {
				return errors.New("fingerprint mismatch")
			}
			return nil
		}}}
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	form := url.Values{"username": {"root@pam"}, "password": {password}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+hostport+"/api2/json/access/ticket", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		if strings.Contains(err.Error(), "fingerprint mismatch") {
			return fmt.Errorf("500 Can't connect to %s (certificate verify failed)", hostport)
		}
		return fmt.Errorf("500 Can't connect to %s (%v)", hostport, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode == http.StatusUnauthorized {
		return errors.New("401 authentication failure")
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}
