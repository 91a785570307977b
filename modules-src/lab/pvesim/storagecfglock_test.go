package pvesim

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// The slow-locked fault as PVE's storage create behaves (pve-storage
// API2/Storage/Config.pm create: lock, check, on_add_hook/activation,
// write_config): while the create is inside storage.cfg's lock the
// storage reads as absent, a second create of the same ID waits for the
// lock and then finds it defined, another storage write waits for the
// lock too, and storage.cfg holds the storage only once the create ends.
func TestSlowLockedStorageCreate(t *testing.T) {
	s := startSim(t, simOpts{LockTimeout: 3 * time.Second})
	c := newClient(t, s, "pve01").LabToken()
	if _, err := s.Faults().Add(Fault{Method: "POST", Path: "/storage", Kind: FaultSlowLocked, Delay: 1500 * time.Millisecond, Count: 1}); err != nil {
		t.Fatal(err)
	}
	nfs := url.Values{"storage": {"backup-nfs"}, "type": {"nfs"}, "server": {"192.0.2.20"}, "export": {"/export/backup"},
		"path": {"/mnt/pve/backup-nfs"}, "content": {"backup"}}
	var wg sync.WaitGroup
	var first resp
	start := time.Now()
	wg.Add(1)
	go func() { defer wg.Done(); first = c.Call("POST", "/storage", nfs) }()
	time.Sleep(300 * time.Millisecond)

	if r := c.Call("GET", "/storage/backup-nfs", nil); r.Status == 200 {
		t.Errorf("the storage shows before the create wrote storage.cfg: %v", r.Data)
	}
	if r := c.Call("GET", "/storage", nil); strings.Contains(pveString(r.Data), "backup-nfs") {
		t.Errorf("the storage list shows it before the create ended")
	}
	if cfg := readStorageCfg(s); strings.Contains(cfg, "backup-nfs") {
		t.Errorf("storage.cfg holds it before the create ended:\n%s", cfg)
	}
	// Storage writes during the create wait for storage.cfg's lock (PVE's
	// cfs lock timeout is 10 s; here 3 s, longer than the create).
	var other, second resp
	var otherEnd, secondEnd time.Time
	wg.Add(2)
	go func() {
		defer wg.Done()
		other = c.Call("PUT", "/storage/local", url.Values{"content": {"iso,backup,vztmpl"}})
		otherEnd = time.Now()
	}()
	go func() { defer wg.Done(); second = c.Call("POST", "/storage", nfs); secondEnd = time.Now() }()
	wg.Wait()
	first.Must(t, "the slow create")
	done := start.Add(1500 * time.Millisecond)
	if time.Since(start) < 1500*time.Millisecond {
		t.Errorf("the create ended before its delay")
	}
	other.Must(t, "a storage write during the create")
	if otherEnd.Before(done) {
		t.Errorf("a storage write went through while the create held storage.cfg's lock")
	}
	if second.Status != 500 || !strings.Contains(second.Reason, "storage ID 'backup-nfs' already defined") || secondEnd.Before(done) {
		t.Errorf("a second create during the first must wait for the lock, then find the ID defined: %d %q", second.Status, second.Reason)
	}
	c.Call("GET", "/storage/backup-nfs", nil).Must(t, "the storage after the create")
	if cfg := readStorageCfg(s); !strings.Contains(cfg, "nfs: backup-nfs") {
		t.Errorf("storage.cfg after the create:\n%s", cfg)
	}
}

func pveString(v any) string {
	if m, ok := v.(map[string]any); ok {
		var b strings.Builder
		for k, x := range m {
			b.WriteString(k + "=" + pvecommon.ParamString(x) + " ")
		}
		return b.String()
	}
	if l, ok := v.([]any); ok {
		var b strings.Builder
		for _, x := range l {
			b.WriteString(pveString(x))
		}
		return b.String()
	}
	return pvecommon.ParamString(v)
}

func readStorageCfg(s *Sim) string {
	b, _ := os.ReadFile(filepath.Join(s.EtcPveDir("pve01"), "storage.cfg"))
	return string(b)
}
