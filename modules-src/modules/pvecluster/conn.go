package pvecluster

import (
	"fmt"
	"strings"

	hostssh "github.com/gopve/proxmox/modules-src/host/ssh"
)

// optionNamed is an error of another node's API with pve_cluster's option
// names: pveapi speaks of api_host, api_user and api_fingerprint, options of
// the modules that talk to one node. Here the address is a node's entry in
// nodes, the user is always root@pam, and the primary's certificate is
// pinned by primary_api_fingerprint.
type optionNamed struct {
	err error
	r   *strings.Replacer
}

func (e *optionNamed) Error() string { return e.r.Replace(e.err.Error()) }
func (e *optionNamed) Unwrap() error { return e.err }

// nameOptions renames the options in err for a connection to node (index
// i of nodes) pinned by fpOption with the password of pwOption.
func nameOptions(err error, node hostssh.Member, i int, fpOption, pwOption string) error {
	if err == nil {
		return nil
	}
	addr := fmt.Sprintf("nodes[%d].address (%s, %s)", i, node.Address, node.Name)
	return &optionNamed{err: err, r: strings.NewReplacer(
		"check api_user/api_password or api_token_id/api_token_secret; a token id is user@realm!name, or name together with api_user", "check "+pwOption+" (root@pam's password on "+node.Name+"; a join needs root@pam, never a token)",
		"check api_user and api_password", "check "+pwOption,
		"api_fingerprint", fpOption,
		"no answer before api_timeout", "no answer within 30 s",
		"api_host", addr,
		"api_user", "the user (root@pam)",
		"api_password", pwOption,
	)}
}

// indexOf is node's position in nodes.
func (m *mod) indexOf(name string) int {
	for i, n := range m.c.members {
		if n.Name == name {
			return i
		}
	}
	return -1
}
