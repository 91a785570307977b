package pvesim

import (
	"net/url"
	"testing"
)

// accessTour makes every /access handler answer 200 once (the tour checks
// each answer's shape against the version's returns schema).
func accessTour(t *testing.T, c, root *apiClient) {
	t.Helper()
	v := url.Values{}
	c.Call("POST", "/access/groups", url.Values{"groupid": {"ops"}, "comment": {"operators"}}).Must(t, "create group")
	c.Call("PUT", "/access/groups/ops", url.Values{"comment": {"ops team"}}).Must(t, "update group")
	c.Call("POST", "/access/users", url.Values{"userid": {"tour@pve"}, "password": {"tour-password"}, "groups": {"ops"},
		"email": {"tour@example.com"}, "comment": {"tour user"}}).Must(t, "create user")
	c.Call("PUT", "/access/users/tour@pve", url.Values{"firstname": {"Tour"}}).Must(t, "update user")
	root.Call("PUT", "/access/password", url.Values{"userid": {"tour@pve"}, "password": {"tour-password2"}}).Must(t, "password")
	c.Call("GET", "/access/users", url.Values{"full": {"1"}}).Must(t, "users")
	c.Call("GET", "/access/users/tour@pve", nil).Must(t, "user")
	c.Call("GET", "/access/groups", v).Must(t, "groups")
	c.Call("GET", "/access/groups/ops", nil).Must(t, "group")
	c.Call("POST", "/access/users/tour@pve/token/ci", url.Values{"comment": {"ci"}}).Must(t, "create token")
	c.Call("PUT", "/access/users/tour@pve/token/ci", url.Values{"expire": {"0"}}).Must(t, "update token")
	c.Call("GET", "/access/users/tour@pve/token", nil).Must(t, "tokens")
	c.Call("GET", "/access/users/tour@pve/token/ci", nil).Must(t, "token")
	c.Call("POST", "/access/roles", url.Values{"roleid": {"Tour"}, "privs": {"VM.Audit,Datastore.Audit"}}).Must(t, "create role")
	c.Call("PUT", "/access/roles/Tour", url.Values{"privs": {"Sys.Audit"}, "append": {"1"}}).Must(t, "update role")
	c.Call("GET", "/access/roles", nil).Must(t, "roles")
	c.Call("GET", "/access/roles/Tour", nil).Must(t, "role")
	c.Call("PUT", "/access/acl", url.Values{"path": {"/storage"}, "roles": {"Tour"}, "users": {"tour@pve"},
		"groups": {"ops"}, "tokens": {"tour@pve!ci"}}).Must(t, "set acl")
	c.Call("GET", "/access/acl", nil).Must(t, "acl")
	c.Call("PUT", "/access/acl", url.Values{"path": {"/storage"}, "roles": {"Tour"}, "groups": {"ops"}, "delete": {"1"}}).Must(t, "delete acl")
	c.Call("DELETE", "/access/users/tour@pve/token/ci", nil).Must(t, "delete token")
	c.Call("DELETE", "/access/roles/Tour", nil).Must(t, "delete role")
	c.Call("DELETE", "/access/users/tour@pve", nil).Must(t, "delete user")
	c.Call("DELETE", "/access/groups/ops", nil).Must(t, "delete group")
}
