// Package accesssim simulates PVE's access API: users, API tokens, groups,
// roles, ACLs, the password change and the caller's permissions, as
// pve-access-control's PVE/API2/User.pm, TokenConfig, Group.pm, Role.pm,
// ACL.pm, AccessControl.pm (permissions, change_password) serve them. Every
// write is lock_user_config on user.cfg (token secrets in priv/token.cfg):
// refused without quorum, a die inside it prefixed by its message, nothing
// written when it dies. The rules (user.cfg's format, privileges per
// version, permission evaluation) are pvesim/access's; login, tickets and
// the permission check of every request are core's, since every backend's
// requests go through them. Pveum (pveum.go) is the lab's own set-up of
// users, tokens and ACLs, for the Go API (pvesim.Sim) and the control API.
package accesssim

import "github.com/gopve/proxmox/modules-src/lab/pvesim/core"

// backend serves the access endpoints on the core's state.
type backend struct{ *core.Sim }

// Register adds the access endpoints to s.
func Register(s *core.Sim) {
	s.Handle((&backend{s}).routes())
	registerPveum(s)
}
