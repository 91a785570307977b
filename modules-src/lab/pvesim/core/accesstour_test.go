package core

import (
	"net/url"
	"testing"
)

// accessTour makes every /access handler answer 200 once (the tour checks
// each answer's shape against the version's returns schema).
func accessTour(t *testing.T, c, root *apiClient) {
	t.Helper()
	v := url.Values{}
	c.call("POST", "/access/groups", url.Values{"groupid": {"ops"}, "comment": {"operators"}}).must(t, "create group")
	c.call("PUT", "/access/groups/ops", url.Values{"comment": {"ops team"}}).must(t, "update group")
	c.call("POST", "/access/users", url.Values{"userid": {"tour@pve"}, "password": {"tour-password"}, "groups": {"ops"},
		"email": {"tour@example.com"}, "comment": {"tour user"}}).must(t, "create user")
	c.call("PUT", "/access/users/tour@pve", url.Values{"firstname": {"Tour"}}).must(t, "update user")
	root.call("PUT", "/access/password", url.Values{"userid": {"tour@pve"}, "password": {"tour-password2"}}).must(t, "password")
	c.call("GET", "/access/users", url.Values{"full": {"1"}}).must(t, "users")
	c.call("GET", "/access/users/tour@pve", nil).must(t, "user")
	c.call("GET", "/access/groups", v).must(t, "groups")
	c.call("GET", "/access/groups/ops", nil).must(t, "group")
	c.call("POST", "/access/users/tour@pve/token/ci", url.Values{"comment": {"ci"}}).must(t, "create token")
	c.call("PUT", "/access/users/tour@pve/token/ci", url.Values{"expire": {"0"}}).must(t, "update token")
	c.call("GET", "/access/users/tour@pve/token", nil).must(t, "tokens")
	c.call("GET", "/access/users/tour@pve/token/ci", nil).must(t, "token")
	c.call("POST", "/access/roles", url.Values{"roleid": {"Tour"}, "privs": {"VM.Audit,Datastore.Audit"}}).must(t, "create role")
	c.call("PUT", "/access/roles/Tour", url.Values{"privs": {"Sys.Audit"}, "append": {"1"}}).must(t, "update role")
	c.call("GET", "/access/roles", nil).must(t, "roles")
	c.call("GET", "/access/roles/Tour", nil).must(t, "role")
	c.call("PUT", "/access/acl", url.Values{"path": {"/storage"}, "roles": {"Tour"}, "users": {"tour@pve"},
		"groups": {"ops"}, "tokens": {"tour@pve!ci"}}).must(t, "set acl")
	c.call("GET", "/access/acl", nil).must(t, "acl")
	c.call("PUT", "/access/acl", url.Values{"path": {"/storage"}, "roles": {"Tour"}, "groups": {"ops"}, "delete": {"1"}}).must(t, "delete acl")
	c.call("DELETE", "/access/users/tour@pve/token/ci", nil).must(t, "delete token")
	c.call("DELETE", "/access/roles/Tour", nil).must(t, "delete role")
	c.call("DELETE", "/access/users/tour@pve", nil).must(t, "delete user")
	c.call("DELETE", "/access/groups/ops", nil).must(t, "delete group")
}
