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
	"strings"
	"time"
)

// The lab's own socket (<dir>/lab.sock) lets `lab power` and other host
// commands act on a running lab, whichever process holds it (the `lab
// supervise` process or a Go test). It stays on the host: unlike the
// control socket, no node sees it, as no PVE node can cut another's power.

// SocketFile is the lab's own socket in its directory.
const SocketFile = "lab.sock"

// PowerReport is the answer to a power action.
type PowerReport struct {
	Node   string `json:"node"`
	Action string `json:"action"`
	WasOn  bool   `json:"was_on"`
	On     bool   `json:"on"`
}

func (l *Lab) labSocket() string { return filepath.Join(l.dir, SocketFile) }

func (l *Lab) serveLabSocket() error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/power", func(w http.ResponseWriter, r *http.Request) {
		out := map[string]bool{}
		for _, n := range l.Nodes() {
			on, _ := l.PoweredOn(n.Name)
			out[n.Name] = on
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /v1/digest", l.serveDigest)
	mux.HandleFunc("POST /v1/nodes/{node}/power/{action}", func(w http.ResponseWriter, r *http.Request) {
		name, action := r.PathValue("node"), r.PathValue("action")
		was, err := l.PoweredOn(name)
		if err != nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
			return
		}
		if err := l.Power(r.Context(), name, action); err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		on, _ := l.PoweredOn(name)
		writeJSON(w, http.StatusOK, PowerReport{Node: name, Action: action, WasOn: was, On: on})
	})
	_ = os.Remove(l.labSocket())
	ln, err := net.Listen("unix", l.labSocket())
	if err != nil {
		return fmt.Errorf("listening on the lab socket: %w", err)
	}
	l.labSock = &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = l.labSock.Serve(ln) }()
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// labSocketClient talks to the lab in dir through its socket.
func labSocketClient(dir string) *http.Client {
	sock := filepath.Join(dir, SocketFile)
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

func callLabSocket(ctx context.Context, dir, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://lab"+path, nil)
	if err != nil {
		return err
	}
	resp, err := labSocketClient(dir).Do(req)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "no such file") || strings.Contains(err.Error(), "connection refused") {
			return fmt.Errorf("no running lab answers in %s (lab up first): %w", dir, err)
		}
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(body))
	}
	return json.Unmarshal(body, out)
}

// PowerRemote runs a power action (PowerActionOff, On or Reboot) on node
// of the lab running in dir.
func PowerRemote(ctx context.Context, dir, node, action string) (PowerReport, error) {
	var rep PowerReport
	err := callLabSocket(ctx, dir, http.MethodPost, "/v1/nodes/"+node+"/power/"+action, &rep)
	return rep, err
}

// PowerStatesRemote tells, per node of the lab running in dir, whether it
// has power.
func PowerStatesRemote(ctx context.Context, dir string) (map[string]bool, error) {
	out := map[string]bool{}
	err := callLabSocket(ctx, dir, http.MethodGet, "/v1/power", &out)
	return out, err
}
