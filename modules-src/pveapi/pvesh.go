package pveapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gopve/proxmox/modules-src/internal/cost"
	"github.com/gopve/proxmox/modules-src/internal/writes"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gopve/proxmox/modules-src/host"
)

// pveshTransport is local mode: the node's own API through pvesh, which
// runs the API handlers in-process as root@pam (no pveproxy, no ticket, no
// TLS). The price is one pvesh process per call; on a real node pvesh
// loads the whole PVE Perl stack, about half a second each.
//
// pvesh takes parameters on its command line only, which every user of the
// node can read (ps, /proc/PID/cmdline) while it runs, and which it hands
// on to ssh when it proxies a call to another node. PVE::CLI::pvesh
// defines no parameter mapping (no read_password, no
// string_param_file_mapping in PVE::CLIHandler's sense), so there is no
// stdin or file form to use instead. A request carrying a secret parameter
// (SecretParams) is therefore refused here, before pvesh runs.
type pveshTransport struct {
	bin string
	// grace is the time pvesh has after SIGTERM, once the run's deadline
	// has passed, before its process group is killed.
	grace time.Duration
	// run executes pvesh (tests replace it).
	run func(ctx context.Context, bin string, args []string) (stdout, stderr []byte, err error)
}

var pveshVerbs = map[string]string{
	http.MethodGet: "get", http.MethodPost: "create", http.MethodPut: "set", http.MethodDelete: "delete",
}

// SecretParams are the API parameters whose values are secrets: PVE keeps
// them under /etc/pve/priv (or hashes them) and never returns them. From
// the PVE 8/9 API schema: storage passwords, PBS encryption keys and Ceph
// keyrings, user and realm passwords, cloud-init passwords, the ACME EAB
// key, webhook secrets and metric/notification tokens.
var SecretParams = []string{"password", "confirmation-password", "cipassword", "encryption-key", "keyring",
	"eab-hmac-key", "secret", "token"}

// LocalSecretError is the refusal of local mode for a secret: name is the
// option (a module names its Ansible option, the transport PVE's
// parameter).
func LocalSecretError(name string) error {
	return fmt.Errorf("%s: a secret is never sent in local mode: this run reaches the node's API through pvesh (a minted ticket could not be used, see the warning), which takes parameters only on its command line, where any user of the node can read them (ps, /proc); fix what the warning names, or set api_host with api_token_id and api_token_secret (or api_user and api_password) so it travels over HTTPS", name)
}

func (t *pveshTransport) do(ctx context.Context, method, path string, params url.Values) (json.RawMessage, error) {
	verb, ok := pveshVerbs[method]
	if !ok {
		return nil, newError(method, path, 0, "method not supported by pvesh", nil, nil)
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if slices.Contains(SecretParams, k) {
			// nothing was run: a request refused before sending
			e := newError(method, path, 0, LocalSecretError(k).Error(), nil, nil)
			e.kind = KindBadRequest
			return nil, e
		}
	}
	unescaped, err := url.PathUnescape(path)
	if err != nil {
		unescaped = path
	}
	args := []string{verb, unescaped, "--output-format", "json"}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		for _, v := range params[k] {
			args = append(args, "--"+k, v)
		}
	}
	run := t.run
	if run == nil {
		run = t.runCommand
	}
	cost.Request(ctx) // one API call; host counts its process
	stdout, stderr, err := run(ctx, t.bin, args)
	if err != nil && ctx.Err() != nil {
		// Stopped by the run's deadline (or cancelled): a write may have
		// happened, so this is never "nothing done" (Do marks it
		// unanswered); the message says what stopped it, not just "signal".
		return nil, newError(method, path, 0, "", nil, &stoppedError{
			what:  fmt.Sprintf("pvesh was stopped because the task's deadline passed (SIGTERM to its process group, SIGKILL after %s)", t.graceOrDefault()),
			cause: context.Cause(ctx)})
	}
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return nil, newError(method, path, 0, "cannot run pvesh: "+err.Error(), nil, nil)
		}
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// Killed by a signal (OOM killer, an admin, a dying session)
			// while it ran the handler: whatever it did is unknown. No
			// answer, not PVE's answer.
			return nil, newError(method, path, 0, "", nil, &pveshLost{fmt.Sprintf("pvesh was killed by signal %d (%s) before it answered", int(ws.Signal()), ws.Signal())})
		}
		status, msg, perrs := parsePveshError(string(stderr))
		if sshLost(msg) {
			// pvesh proxied the call to the node that handles it over ssh
			// (PVE::CLI::pvesh proxy_handler) and ssh itself failed (255):
			// the remote pvesh may or may not have run it.
			return nil, newError(method, path, 0, "", nil, &pveshLost{"pvesh proxies this call to another node over ssh, and ssh failed before an answer came: " + msg})
		}
		return nil, newError(method, path, status, msg, perrs, nil)
	}
	out := bytes.TrimSpace(stdout)
	if len(out) == 0 {
		return json.RawMessage("null"), nil
	}
	if !json.Valid(out) {
		return nil, newError(method, path, 0, "pvesh printed something that is not JSON", nil, nil)
	}
	return json.RawMessage(out), nil
}

// runCommand runs pvesh the way the project runs every command
// (host.ExecRunner): in its own process group, SIGTERM to the group when
// the run's deadline passes, SIGKILL after the grace period. The module's
// environment is kept (pvesh needs nothing from it, the lab's stand-in may
// be pointed at its node description).
func (t *pveshTransport) runCommand(ctx context.Context, bin string, args []string) ([]byte, []byte, error) {
	r := &host.ExecRunner{BaseEnv: os.Environ(), TermGrace: t.graceOrDefault()}
	// Dispatch notes the write pvesh carries, and only when PVE did not
	// refuse it; the runner must not note it again (issue 23 §2).
	res, err := r.Run(writes.Detach(ctx), host.Command{Name: bin, Args: args})
	var ce *host.CommandError
	if errors.As(err, &ce) && ce.Err != nil {
		err = ce.Err // the *exec.ExitError (or start failure) underneath
	}
	return []byte(res.Stdout), []byte(res.Stderr), err
}

func (t *pveshTransport) graceOrDefault() time.Duration {
	if t.grace > 0 {
		return t.grace
	}
	return host.DefaultTermGrace
}

// pveshLost is a pvesh call that ended without an answer: killed by a
// signal, or its ssh proxy to another node failed.
type pveshLost struct{ what string }

func (e *pveshLost) Error() string { return e.what }

// sshLost tells whether pvesh's die message is its ssh proxy failing:
// proxy_handler runs `ssh -o BatchMode=yes root@IP pvesh --noproxy …`
// through PVE::Tools::run_command with errmsg "proxy handler failed",
// which dies "proxy handler failed: command '…' failed: exit code 255"
// when ssh exits 255 (ssh's own failure: connection refused, reset,
// host key, a remote end killed); a remote pvesh's own die prints PVE's
// message first. Reconstruction from pvesh.pm and run_command's wording,
// not checked on a real node.
func sshLost(msg string) bool {
	return strings.Contains(msg, "proxy handler failed") && strings.Contains(msg, "ssh ") &&
		(strings.Contains(msg, "exit code 255") || strings.Contains(msg, "signal"))
}

var (
	statusLine = regexp.MustCompile(`^(\d{3}) (.*)$`)
	paramLine  = regexp.MustCompile(`^([A-Za-z0-9_\-\[\]]+): (.*)$`)
)

// parsePveshError reads pvesh's stderr: "400 Parameter verification
// failed." followed by "param: message" lines, or a plain die message
// ("storage 'x' does not exist"), which the classifier reads by text.
// Reconstruction: this is the lab stand-in's format, modelled on what real
// pvesh prints (PVE::CLIHandler); not checked against a real node.
func parsePveshError(stderr string) (int, string, map[string]string) {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	first := strings.TrimSpace(lines[0])
	status := 0
	if m := statusLine.FindStringSubmatch(first); m != nil {
		status, _ = strconv.Atoi(m[1])
		first = m[2]
	}
	var perrs map[string]string
	if status == 400 {
		for _, l := range lines[1:] {
			if m := paramLine.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				if perrs == nil {
					perrs = map[string]string{}
				}
				perrs[m[1]] = m[2]
			}
		}
		return status, first, perrs
	}
	return status, strings.TrimSpace(strings.Join(append([]string{first}, lines[1:]...), "\n")), nil
}
