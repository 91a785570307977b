// Package apiclient is the stand-ins' client of their own node's PVE API
// (what real pvesm/pvesh reach through the API handlers): HTTPS with the
// node's certificate pinned by fingerprint and the lab token from node.json.
package apiclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/control"
	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
)

// Client calls one node's API.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New builds a client from node.json; it needs api and api_token. When the
// control socket answers, the node's current certificate fingerprint comes
// from there: real pvesh on a node trusts its own certificate whatever a
// join did to it (C5), and so must the stand-ins.
func New(n *nodecfg.Node) (*Client, error) {
	if n.Control != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		info, err := control.New(n.Control).Node(ctx, n.Node)
		cancel()
		if err == nil && info.Fingerprint != "" {
			c := *n
			c.APIFingerprint = info.Fingerprint
			n = &c
		}
	}
	if n.API == "" {
		return nil, errors.New(`node.json has no "api" URL: the lab runs without the API simulator`)
	}
	if n.APIToken == "" {
		return nil, errors.New(`node.json has no "api_token": the lab did not give this node API credentials`)
	}
	want := strings.ToUpper(strings.ReplaceAll(n.APIFingerprint, ":", ""))
	tlsCfg := &tls.Config{InsecureSkipVerify: true, // verified below, by fingerprint (self-signed node certs)
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if want == "" {
				return errors.New(`node.json has no "api_fingerprint" to verify the API certificate with`)
			}
			if len(raw) == 0 {
				return errors.New("API server sent no certificate")
			}
			sum := sha256.Sum256(raw[0])
			if fmt.Sprintf("%X", sum[:]) != want {
				return fmt.Errorf("API certificate fingerprint %X does not match node.json's api_fingerprint", sum[:])
			}
			return nil
		}}
	return &Client{base: strings.TrimRight(n.API, "/") + "/api2/json", token: n.APIToken,
		http: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}}, nil
}

// Error is an API error: the HTTP status and PVE's message.
type Error struct {
	Status  int
	Message string
	Errors  map[string]string
}

func (e *Error) Error() string {
	if e.Status == 400 && len(e.Errors) > 0 {
		keys := slices.Sorted(maps.Keys(e.Errors))
		var b strings.Builder
		b.WriteString("400 Parameter verification failed.\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %s\n", k, strings.TrimSpace(e.Errors[k]))
		}
		return strings.TrimRight(b.String(), "\n")
	}
	return strings.TrimRight(e.Message, "\n")
}

// Call sends params (form-encoded; query for GET and DELETE) and returns
// the raw "data" member of the answer.
func (c *Client) Call(ctx context.Context, method, path string, params url.Values) (json.RawMessage, error) {
	u := c.base + "/" + strings.TrimLeft(path, "/")
	var body io.Reader
	if method == http.MethodGet || method == http.MethodDelete {
		if len(params) > 0 {
			u += "?" + params.Encode()
		}
	} else {
		body = bytes.NewBufferString(params.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "PVEAPIToken="+c.token)
	// The real tools run the handlers as root@pam (setup_default_cli_env):
	// the simulator records their tasks so (pvesim.CLIHeader).
	req.Header.Set("X-Gopve-Lab-Cli", "1")
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the node's API: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read API answer: %w", err)
	}
	var env struct {
		Data    json.RawMessage   `json:"data"`
		Message string            `json:"message"`
		Errors  map[string]string `json:"errors"`
	}
	jerr := json.Unmarshal(b, &env)
	if resp.StatusCode/100 != 2 {
		msg := env.Message
		if msg == "" {
			// older PVE 8 puts the message only in the reason phrase
			msg = strings.TrimPrefix(resp.Status, fmt.Sprintf("%d ", resp.StatusCode))
		}
		return nil, &Error{Status: resp.StatusCode, Message: msg, Errors: env.Errors}
	}
	if jerr != nil {
		return nil, fmt.Errorf("API answer to %s %s is not JSON: %w", method, path, jerr)
	}
	return env.Data, nil
}
