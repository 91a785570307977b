package labtest

import (
	"context"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
)

// GuestOn polls /cluster/resources through api until guest vmid meets
// cond (on a node, running: what HA's failover and failback end in), for
// at most two minutes, and fails the test naming what it waited for and
// the last state seen.
func GuestOn(t *testing.T, api pveapi.Getter, vmid int, what string, cond func(clusterguests.Guest) bool) clusterguests.Guest {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	var last clusterguests.Guest
	for time.Now().Before(deadline) {
		if list, err := clusterguests.Guests(ctx, api); err == nil {
			if g, ok := clusterguests.Find(list, vmid); ok {
				if last = g; cond(g) {
					return g
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("guest %d never %s (last seen %+v)", vmid, what, last)
	return last
}
