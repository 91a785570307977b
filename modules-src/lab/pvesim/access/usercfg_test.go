package access

import (
	"reflect"
	"strings"
	"testing"
)

// What the Render methods write, Parse reads back: the user.cfg and
// token.cfg the lab shows in /etc/pve are its access model, comments with
// ':' included (encode_text), passwords kept from the old model (they are
// not in user.cfg).
func TestRenderParseRoundTrip(t *testing.T) {
	a := Config{
		Users: map[string]*User{
			"root@pam":  {ID: "root@pam", Password: "pw"},
			"ci@pve":    {ID: "ci@pve", Expire: 4102444800, Firstname: "C:I", Email: "ci@example.com", Comment: "robot 100%"},
			"bob@pam":   {ID: "bob@pam", Disabled: true},
			"other@pve": {ID: "other@pve"},
		},
		Tokens: map[string]*Token{
			"ci@pve!deploy": {ID: "ci@pve!deploy", Secret: "s1", Privsep: true, Comment: "a:b"},
			"root@pam!lab":  {ID: "root@pam!lab", Secret: "s2"},
		},
		Groups: map[string]*Group{"ops": {ID: "ops", Comment: "x", Members: []string{"bob@pam", "ci@pve"}}},
		Roles:  map[string]map[string]bool{"Automation": {"VM.Audit": true, "Sys.Audit": true}},
		ACL: []ACLEntry{
			{Path: "/", UGID: "@ops", Role: "Automation", Propagate: true},
			{Path: "/", UGID: "bob@pam", Role: "PVEAuditor"},
			{Path: "/storage/local", UGID: "ci@pve!deploy", Role: "PVEDatastoreUser", Propagate: true},
		},
	}
	var b strings.Builder
	a.RenderUsers(&b)
	a.RenderGroups(&b)
	a.RenderRoles(&b, 9)
	a.RenderACL(&b)
	got := Parse(b.String(), a.RenderTokenCfg(), 9, &a)
	for _, want := range a.ACL {
		if !hasEntry(got.ACL, want) {
			t.Errorf("ACL %+v lost; parsed %+v", want, got.ACL)
		}
	}
	got.ACL, a.ACL = nil, nil
	if !reflect.DeepEqual(got, a) {
		t.Errorf("parsed\n%+v\nwant\n%+v\nfrom\n%s", got, a, b.String())
	}
}

func hasEntry(acl []ACLEntry, e ACLEntry) bool {
	for _, x := range acl {
		if x == e {
			return true
		}
	}
	return false
}

// parse_user_config ignores what it cannot use: a role or token an ACL
// line names that does not exist, a token of a missing user, a privilege
// the version does not know (VM.Monitor is gone on PVE 9).
func TestParseIgnoresWhatPVEIgnores(t *testing.T) {
	cfg := "user:a@pve:1:0::::::\n" +
		"token:nobody@pve!t:0:1::\n" +
		"role:Mon:VM.Monitor,VM.Audit:\n" +
		"acl:1:/:a@pve:NoSuchRole:\n" +
		"acl:1:/:a@pve!gone:PVEAuditor:\n" +
		"acl:1:/vms:a@pve:Mon:\n"
	got := Parse(cfg, "", 9, &Config{})
	if len(got.Tokens) != 0 {
		t.Errorf("token of a missing user kept: %v", got.Tokens)
	}
	if !reflect.DeepEqual(got.Roles["Mon"], map[string]bool{"VM.Audit": true}) {
		t.Errorf("role Mon on PVE 9: %v, want VM.Audit only", got.Roles["Mon"])
	}
	want := []ACLEntry{{Path: "/vms", UGID: "a@pve", Role: "Mon", Propagate: true}}
	if !reflect.DeepEqual(got.ACL, want) {
		t.Errorf("ACL %+v, want %+v", got.ACL, want)
	}
	if v8 := Parse(cfg, "", 8, &Config{}); !v8.Roles["Mon"]["VM.Monitor"] {
		t.Errorf("PVE 8 knows VM.Monitor: %v", v8.Roles["Mon"])
	}
}
