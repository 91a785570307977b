package pveapi_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/perltest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// ticketPerl does with Debian's Crypt::OpenSSL::RSA and Digest::SHA what
// PVE does with them (pve-common Ticket.pm, pve-access-control
// AccessControl.pm; written for this test, calling the library as PVE
// calls it: new_private_key/new_public_key on the PEM files, sign and
// verify with the library's defaults, hmac_sha256_base64 with the key
// last). Environment: PRIV, PUB, WWW (file contents), USERID, GO_TICKET,
// GO_TICKET_256, GO_CSRF; with GEN set it also makes a key pair as
// rotate_authkey writes one. One "name value" line per result.
const ticketPerl = `
use strict; use warnings;
use Crypt::OpenSSL::RSA; use MIME::Base64; use Digest::SHA;
my $priv = Crypt::OpenSSL::RSA->new_private_key($ENV{PRIV});
my $pub = Crypt::OpenSSL::RSA->new_public_key($ENV{PUB});
my $ts = sprintf("%08X", time());
my $plain = "PVE:$ENV{USERID}:$ts";
print "ticket ", $plain, "::", encode_base64($priv->sign($plain), ''), "\n";
for my $t (['verify', $ENV{GO_TICKET}], ['verify256', $ENV{GO_TICKET_256}]) {
    my $ok = 0;
    if ($t->[1] =~ m/^(PVE:\S+)::([^:\s]+)$/) {
        $ok = eval { $pub->verify($1, decode_base64($2)) } ? 1 : 0;
    }
    print "$t->[0] $ok\n";
}
my $secret = Digest::SHA::hmac_sha256_base64($ENV{WWW});
print "csrf $ts:", Digest::SHA::hmac_sha256_base64("$ts:$ENV{USERID}", $secret), "\n";
my $cok = 0;
if ($ENV{GO_CSRF} =~ m/^([A-Z0-9]{8}):(\S+)$/) {
    $cok = Digest::SHA::hmac_sha256_base64("$1:$ENV{USERID}", $secret) eq $2 ? 1 : 0;
}
print "csrfverify $cok\n";
print "version $Crypt::OpenSSL::RSA::VERSION\n";
if ($ENV{GEN}) {
    my $k = Crypt::OpenSSL::RSA->generate_key(2048);
    print "genpriv ", encode_base64($k->get_private_key_string(), ''), "\n";
    print "genpub ", encode_base64($k->get_public_key_x509_string(), ''), "\n";
}
`

func perlResults(t *testing.T, out string) map[string]string {
	t.Helper()
	res := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, " ")
		res[k] = v
	}
	return res
}

func parsePrivPEM(t *testing.T, b []byte) *rsa.PrivateKey {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("not PEM: %.40q", b)
	}
	if k, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err == nil {
		return k
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(*rsa.PrivateKey)
}

func parsePubPEM(t *testing.T, b []byte) *rsa.PublicKey {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		t.Fatalf("authkey.pub is not a PEM \"PUBLIC KEY\" (get_public_key_x509_string, openssl rsa -pubout): %.40q", b)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(*rsa.PublicKey)
}

// TestTicketsAsPerlSignsThem (issue 24 §1): PVE's tickets and CSRF tokens
// judged by Debian's own Perl libraries, Crypt::OpenSSL::RSA 0.33 on the
// Debian 12 host against the PVE 8 lab and 0.35 in the cached Debian 13
// root against the PVE 9 lab, both ways:
//   - a ticket Perl signs (the library's default sign, as assemble_rsa_ticket
//     calls it) with the lab's key is accepted by the lab and by the
//     module's VerifyTicket, as SHA-1 and not as SHA-256; its CSRF token
//     (hmac_sha256_base64) is accepted by the lab on a write;
//   - a ticket and CSRF token the module mints verify with Perl's verify
//     and Digest::SHA; the same ticket signed SHA-256 (the module's old
//     guess) does not;
//   - Perl reads the keys the lab writes (gen_auth_key's forms), and a key
//     pair Perl writes as rotate_authkey does (RSA PRIVATE KEY, PUBLIC KEY,
//     the old public key kept as authkey.pub.old) is read by the lab and by
//     local mode, which then reads and writes with tickets it mints, while
//     the ticket of the old key still works.
func TestTicketsAsPerlSignsThem(t *testing.T) {
	perls := perltest.Both(t)
	for _, p := range perls {
		t.Run(fmt.Sprint("PVE", p.PVE), func(t *testing.T) {
			s := pveapitest.Start(t, p.PVE, 1)
			info, _ := s.Node("pve01")
			dir := s.EtcPveDir("pve01")
			read := func(rel string) []byte {
				b, err := os.ReadFile(filepath.Join(dir, rel))
				if err != nil {
					t.Fatalf("/etc/pve/%s: %v", rel, err)
				}
				return b
			}
			privPEM, pubPEM, www := read("priv/authkey.key"), read("authkey.pub"), read("pve-www.key")
			priv, pub := parsePrivPEM(t, privPEM), parsePubPEM(t, pubPEM)
			now := time.Now()
			goTicket, err := pveapi.MintTicket(priv, "root@pam", now)
			if err != nil {
				t.Fatal(err)
			}
			goTicket256, _ := pveapi.MintTicketHash(priv, "root@pam", now, pveapi.TicketSHA256)
			goCSRF := pveapi.CSRFToken(www, "root@pam", now)
			out, err := p.Run(ticketPerl, map[string]string{"PRIV": string(privPEM), "PUB": string(pubPEM), "WWW": string(www),
				"USERID": "root@pam", "GO_TICKET": goTicket, "GO_TICKET_256": goTicket256, "GO_CSRF": goCSRF, "GEN": "1"})
			if err != nil {
				t.Fatalf("%s: %v", p.Name, err)
			}
			r := perlResults(t, out)
			t.Logf("%s: Crypt::OpenSSL::RSA %s", p.Name, r["version"])

			// The module's ticket and token, judged by Perl.
			if r["verify"] != "1" {
				t.Errorf("%s: Perl's verify refuses the ticket MintTicket signs", p.Name)
			}
			if r["verify256"] != "0" {
				t.Errorf("%s: Perl's verify accepts a SHA-256 signature: the library's default is not what this test assumes", p.Name)
			}
			if r["csrfverify"] != "1" {
				t.Errorf("%s: Digest::SHA refuses the module's CSRF token", p.Name)
			}

			// Perl's ticket, judged by the module's verification and the lab.
			perlTicket := r["ticket"]
			if user, at, err := pveapi.VerifyTicket(pub, perlTicket, pveapi.TicketSHA1); err != nil || user != "root@pam" || now.Sub(at) > time.Minute || at.Sub(now) > time.Minute {
				t.Errorf("%s: VerifyTicket(Perl's ticket, SHA-1) = %q %v %v", p.Name, user, at, err)
			}
			if _, _, err := pveapi.VerifyTicket(pub, perlTicket, pveapi.TicketSHA256); err == nil {
				t.Errorf("%s: Perl's ticket verifies as SHA-256 too: the check proves nothing", p.Name)
			}
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			call := func(method, path, ticket, csrf string, form url.Values) int {
				t.Helper()
				req, _ := http.NewRequest(method, info.URL+path, strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.AddCookie(&http.Cookie{Name: "PVEAuthCookie", Value: ticket})
				if csrf != "" {
					req.Header.Set("CSRFPreventionToken", csrf)
				}
				res, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				return res.StatusCode
			}
			if got := call("GET", "/nodes", perlTicket, "", nil); got != 200 {
				t.Errorf("%s: the lab answers Perl's ticket with %d", p.Name, got)
			}
			if got := call("GET", "/nodes", goTicket256, "", nil); got != 401 {
				t.Errorf("%s: the lab answers a SHA-256 ticket with %d, want 401 as PVE", p.Name, got)
			}
			if got := call("POST", "/pools", perlTicket, r["csrf"], url.Values{"poolid": {"perl"}}); got != 200 {
				t.Errorf("%s: a write with Perl's ticket and CSRF token: %d", p.Name, got)
			}

			// A rotation as rotate_authkey writes it, with Perl's key pair.
			genPriv, _ := base64.StdEncoding.DecodeString(r["genpriv"])
			genPub, _ := base64.StdEncoding.DecodeString(r["genpub"])
			if !strings.HasPrefix(string(genPriv), "-----BEGIN RSA PRIVATE KEY-----") || !strings.HasPrefix(string(genPub), "-----BEGIN PUBLIC KEY-----") {
				t.Fatalf("%s: get_private_key_string / get_public_key_x509_string wrote %.32q / %.32q", p.Name, genPriv, genPub)
			}
			for rel, b := range map[string][]byte{"authkey.pub.old": pubPEM, "authkey.pub": genPub, "priv/authkey.key": genPriv} {
				if err := os.WriteFile(filepath.Join(dir, rel), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if got := call("GET", "/nodes", perlTicket, "", nil); got != 200 {
				t.Errorf("%s: the old key's ticket after the rotation (authkey.pub.old): %d", p.Name, got)
			}
			n := newLocalNode(t, s, "pve01")
			pvesh, calls := fakePvesh(t)
			c, err := pveapi.Connect(context.Background(), pveapi.Connection{}, n.options(pvesh))
			if err != nil || c.Pvesh() || len(c.Warnings()) > 0 {
				t.Fatalf("%s: local mode with Perl's key pair: %v, pvesh %v, warnings %q", p.Name, err, c != nil && c.Pvesh(), c.Warnings())
			}
			s.ResetRequests()
			if err := pveapitest.Send(context.Background(), c, "POST", "/pools", url.Values{"poolid": {"minted"}}, nil); err != nil {
				t.Errorf("%s: a write with a ticket minted from Perl's key: %v", p.Name, err)
			}
			if _, err := os.Stat(calls); err == nil {
				t.Errorf("%s: pvesh ran", p.Name)
			}
			var seen []string
			for _, q := range s.Requests() {
				seen = append(seen, q.Method+" "+q.Path+" "+http.StatusText(q.Status)+" "+q.Auth)
			}
			if want := []string{"GET /cluster/status OK root@pam", "POST /pools OK root@pam"}; strings.Join(seen, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: requests\n%s\nwant\n%s", p.Name, strings.Join(seen, "\n"), strings.Join(want, "\n"))
			}
			out, err = p.Run(ticketPerl, map[string]string{"PRIV": string(genPriv), "PUB": string(genPub), "WWW": string(www), "USERID": "root@pam",
				"GO_TICKET": mustMint(t, parsePrivPEM(t, genPriv), now), "GO_TICKET_256": "", "GO_CSRF": goCSRF})
			if err != nil {
				t.Fatalf("%s: %v", p.Name, err)
			}
			r2 := perlResults(t, out)
			if r2["verify"] != "1" {
				t.Errorf("%s: Perl refuses the module's ticket signed with Perl's own key", p.Name)
			}
			if got := call("GET", "/nodes", r2["ticket"], "", nil); got != 200 {
				t.Errorf("%s: the lab answers Perl's ticket of the new key with %d", p.Name, got)
			}
		})
	}
}

func mustMint(t *testing.T, k *rsa.PrivateKey, at time.Time) string {
	t.Helper()
	s, err := pveapi.MintTicket(k, "root@pam", at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLocalModeTriesSHA256Once (issue 24 §1): a node that refuses the
// ticket PVE's Perl signs (SHA-1) gets one more, signed SHA-256; when it
// takes that, local mode uses it and the warning names the form the node
// accepted; when it takes neither, pvesh, with both refusals named. The
// lab's TicketHash stands for such a node (no Debian release of PVE is).
func TestLocalModeTriesSHA256Once(t *testing.T) {
	s := pveapitest.StartWith(t, 9, 1, func(c *pvesim.Config) { c.TicketHash = crypto.SHA256 })
	n := newLocalNode(t, s, "pve01")
	pvesh, calls := fakePvesh(t)
	c, err := pveapi.Connect(context.Background(), pveapi.Connection{}, n.options(pvesh))
	if err != nil || c.Pvesh() {
		t.Fatalf("Connect: %v (pvesh %v)", err, c != nil && c.Pvesh())
	}
	w := c.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "refused a ticket signed SHA-1/PKCS#1 v1.5") || !strings.Contains(w[0], "accepted one signed SHA-256/PKCS#1 v1.5") {
		t.Errorf("warnings %q: want one naming the form the node accepted", w)
	}
	if err := pveapitest.Send(context.Background(), c, "POST", "/pools", url.Values{"poolid": {"sha256"}}, nil); err != nil {
		t.Errorf("a write with the SHA-256 ticket: %v", err)
	}
	var seen []string
	for _, q := range s.Requests() {
		seen = append(seen, q.Method+" "+q.Path+" "+http.StatusText(q.Status))
	}
	want := []string{"GET /version Unauthorized", "GET /version OK", "GET /cluster/status OK", "POST /pools OK"}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(calls); err == nil {
		t.Errorf("pvesh ran")
	}
}
