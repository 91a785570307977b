package reqlog

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/httpwire"
)

// Request.Carries names where a watched secret was (body, query, path,
// header) by its label, and the log's params never show the value.
func TestCarriesNamesWhereAWatchedSecretWas(t *testing.T) {
	watched := []watchedSecret{{"pw", "s3cr3t-MARK"}, {"tok", "tok-MARK"}}
	r := httptest.NewRequest("POST", "/api2/json/storage?note=x-s3cr3t-MARK", strings.NewReader("password=s3cr3t-MARK&storage=a"))
	r.Header.Set("Authorization", "PVEAPIToken=root@pam!lab=tok-MARK")
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	params, err := httpwire.ReadParams(r)
	if err != nil {
		t.Fatal(err)
	}
	got := carries(r, params, watched)
	want := []string{"pw in body:password", "pw in query:note", "tok in header:Authorization"}
	if !slices.Equal(got, want) {
		t.Errorf("carries %q, want %q", got, want)
	}
	for k, v := range redactParams(params, values(watched)) {
		if strings.Contains(v, "MARK") {
			t.Errorf("the log shows %s=%s", k, v)
		}
	}
	if c := carries(r, params, nil); c != nil {
		t.Errorf("nothing watched, carries %q", c)
	}
}
