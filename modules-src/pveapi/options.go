package pveapi

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/ansible"
)

// Connection is how a module reaches the PVE API: the options every API
// module shares, with community.proxmox's names and environment fallbacks.
// Embed it in a module's params struct (Decode squashes embedded structs).
type Connection struct {
	Host          string `ansible:"api_host"`
	Port          int    `ansible:"api_port"`
	User          string `ansible:"api_user"`
	Password      string `ansible:"api_password"`
	TokenID       string `ansible:"api_token_id"`
	TokenSecret   string `ansible:"api_token_secret"`
	ValidateCerts bool   `ansible:"validate_certs"`
	CAPath        string `ansible:"ca_path"`
	Fingerprint   string `ansible:"api_fingerprint"`
	Timeout       int    `ansible:"api_timeout"`
}

// DefaultPort is pveproxy's port.
const DefaultPort = 8006

// ConnectionOptions returns the shared option definitions (a fresh map each
// call, so a module may not alter another module's spec by accident).
func ConnectionOptions() map[string]ansible.Option {
	return map[string]ansible.Option{
		"api_host": {Type: ansible.TypeStr, EnvFallback: []string{"PROXMOX_HOST"},
			Description: []string{
				"Name or address of a PVE node whose API (pveproxy) the module talks to.",
				"When unset and the module runs as root on a PVE node, it uses that node's own API (local mode): it signs a short-lived root@pam ticket with the cluster's /etc/pve/priv/authkey.key, as PVE does at a login, and calls the node's pveproxy over HTTPS, verified against /etc/pve/pve-root-ca.pem. No credentials are needed and secrets travel in the request body.",
				"When that is not possible (keys unreadable, the ticket refused), local mode falls back to pvesh with a warning saying why: one pvesh process (about half a second on a real node) per API call, and, since pvesh takes parameters only on its command line, which any user of the node can read, no secret (a storage password or encryption key) is ever sent then.",
			}},
		"api_port": {Type: ansible.TypeInt, Default: DefaultPort, EnvFallback: []string{"PROXMOX_PORT"},
			Description: []string{"Port of the API."}},
		"api_user": {Type: ansible.TypeStr, EnvFallback: []string{"PROXMOX_USER"},
			Description: []string{"User with realm (root@pam) for password authentication, or the owner of a token given by its short name."}},
		"api_password": {Type: ansible.TypeStr, NoLog: true, EnvFallback: []string{"PROXMOX_PASSWORD"},
			Description: []string{"Password of api_user. The module logs in once per run (POST /access/ticket) and uses the ticket."}},
		"api_token_id": {Type: ansible.TypeStr, EnvFallback: []string{"PROXMOX_TOKEN_ID"},
			Description: []string{"API token id, either user@realm!name or only name (then api_user gives the user). Takes precedence over api_password."}},
		"api_token_secret": {Type: ansible.TypeStr, NoLog: true, EnvFallback: []string{"PROXMOX_TOKEN_SECRET"},
			Description: []string{"Secret (UUID) of the API token."}},
		"validate_certs": {Type: ansible.TypeBool, Default: true, EnvFallback: []string{"PROXMOX_VALIDATE_CERTS"},
			Description: []string{"Verify the node's TLS certificate. PVE signs node certificates with its own cluster CA: trust it with ca_path or pin the certificate with api_fingerprint rather than turning this off."}},
		"ca_path": {Type: ansible.TypePath,
			Description: []string{"PEM file of the CA to trust in addition to the system's, e.g. a copy of the cluster's /etc/pve/pve-root-ca.pem."}},
		"api_fingerprint": {Type: ansible.TypeStr,
			Description: []string{"SHA-256 fingerprint of the node's certificate (AA:BB:…, as `pvenode cert info` prints it). When set, exactly that certificate is accepted, whoever signed it. A cluster join gives the joining node a new certificate."}},
		"api_timeout": {Type: ansible.TypeInt, Default: 30,
			Description: []string{"Seconds to wait for one API answer. Reads that time out are retried; writes are re-checked by reading, never sent twice blindly."}},
	}
}

// WithConnection returns spec with the connection options merged in. A
// module that declares an option of the same name is a bug: it panics, and
// the registry test catches it.
func WithConnection(spec ansible.Spec) ansible.Spec {
	opts := maps.Clone(spec.Options)
	if opts == nil {
		opts = map[string]ansible.Option{}
	}
	for _, name := range slices.Sorted(maps.Keys(ConnectionOptions())) {
		if _, clash := opts[name]; clash {
			panic(fmt.Sprintf("pveapi: module declares connection option %q itself", name))
		}
		opts[name] = ConnectionOptions()[name]
	}
	spec.Options = opts
	spec.RequiredTogether = append(slices.Clone(spec.RequiredTogether), []string{"api_token_id", "api_token_secret"})
	return spec
}

// ForRun connects for a module run: requests are logged at -vvv (method,
// path, outcome; never values) unless o.Log is set, and switching
// verification off is warned about.
func ForRun(r *ansible.Run, conn Connection, o Options) (*Client, error) {
	if conn.Host != "" && !conn.ValidateCerts && conn.Fingerprint == "" {
		r.Warn("validate_certs is false: anyone between this host and " + conn.Host + " can read the API credentials; trust the cluster CA with ca_path or pin the node with api_fingerprint instead")
	}
	if o.Log == nil {
		o.Log = func(format string, args ...any) { r.Log(3, format, args...) }
	}
	c, err := Connect(r.Context(), conn, o)
	if err != nil {
		return nil, err
	}
	for _, w := range c.Warnings() {
		r.Warn(w)
	}
	return c, nil
}
