package labctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// GuestFixture declares a guest a lab starts with (`lab up --guests FILE`):
// a template on a node, a running VM… The file is a JSON list of them.
type GuestFixture struct {
	Node string `json:"node"`
	pvesim.GuestSpec
}

// ReadGuestFixtures reads a fixture file.
func ReadGuestFixtures(path string) ([]GuestFixture, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading guest fixtures: %w", err)
	}
	var list []GuestFixture
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("guest fixtures %s: want a JSON list of {\"node\",\"vmid\",\"template\",\"running\",\"config\"}: %w", path, err)
	}
	for i, g := range list {
		if g.Node == "" || g.VMID == 0 {
			return nil, fmt.Errorf("guest fixtures %s: entry %d needs a node and a vmid", path, i+1)
		}
	}
	return list, nil
}

// AddGuests creates the fixtures through the lab's control socket in dir.
// A guest already there (the same VMID) is left alone, so `lab up` stays
// idempotent; it returns one line per fixture saying what happened.
func AddGuests(ctx context.Context, dir string, guests []GuestFixture) ([]string, error) {
	sock := filepath.Join(dir, "control.sock")
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	defer hc.CloseIdleConnections()
	var out []string
	for _, g := range guests {
		body, _ := json.Marshal(g.GuestSpec)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://lab/v1/nodes/"+g.Node+"/guests", bytes.NewReader(body))
		if err != nil {
			return out, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return out, fmt.Errorf("lab control socket %s: %w", sock, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		switch {
		case resp.StatusCode == http.StatusOK:
			out = append(out, fmt.Sprintf("guest %d on %s: created", g.VMID, g.Node))
		case resp.StatusCode == http.StatusConflict:
			out = append(out, fmt.Sprintf("guest %d: already there (%s)", g.VMID, e.Error))
		default:
			if e.Error == "" {
				e.Error = resp.Status
			}
			return out, errors.New("guest " + fmt.Sprint(g.VMID) + " on " + g.Node + ": " + e.Error)
		}
	}
	return out, nil
}
