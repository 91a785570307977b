package ha_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// TestReadResource: ha.ReadResource reads one resource; PVE's answer for a
// SID HA does not have (API2/HA/Resources.pm $api_copy_config: die "no
// such resource '<sid>'", a 500) is "not found", not an error, while a
// guest HA has, in any requested state, is found.
func TestReadResource(t *testing.T) {
	for _, v := range []int{8, 9} {
		ctx := context.Background()
		s := pveapitest.Start(t, v, 3)
		pveapitest.Cluster(t, s)
		c, err := pveapi.Connect(ctx, pveapitest.TokenConn(t, s, "pve01"), pveapi.Options{Retry: &pveapitest.FastRetry, TaskPoll: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AddGuest("pve01", pvesim.GuestSpec{VMID: 201, Config: map[string]string{"name": "a"}}); err != nil {
			t.Fatal(err)
		}
		sid := ha.SID{Type: "vm", VMID: 201}
		if _, found, err := ha.ReadResource(ctx, c, sid); err != nil || found {
			t.Fatalf("PVE %d before: found %v, %v", v, found, err)
		}
		req, err := ha.CreateResource(ha.Resource{SID: sid, State: ha.StateStopped}, v)
		if err != nil {
			t.Fatal(err)
		}
		send(t, c, v, req)
		r, found, err := ha.ReadResource(ctx, c, sid)
		if err != nil || !found || r.SID != sid || r.State != ha.StateStopped {
			t.Errorf("PVE %d read back %+v %v %v", v, r, found, err)
		}
	}
}

// TestNoSuchResource: only PVE's refusal for that SID means "none"; the
// same words for another SID, or another failure, do not.
func TestNoSuchResource(t *testing.T) {
	sid := ha.SID{Type: "vm", VMID: 201}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pveapi.Error{Status: 500, Message: "no such resource 'vm:201'\n"}, true},
		{&pveapi.Error{Status: 0, Message: "no such resource 'vm:201'"}, true}, // pvesh
		{&pveapi.Error{Status: 404, Message: "Not Found"}, true},
		{&pveapi.Error{Status: 500, Message: "no such resource 'vm:2010'"}, false},
		{&pveapi.Error{Status: 403, Message: "Permission check failed (/, Sys.Audit)"}, false},
		{&pveapi.Error{Status: 500, Message: "cfs-lock 'domain-ha' error: got lock request timeout"}, false},
		{errors.New("no such resource 'vm:201'"), false}, // not PVE's answer
	} {
		if got := ha.NoSuchResource(tc.err, sid); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.err, got, tc.want)
		}
	}
}
