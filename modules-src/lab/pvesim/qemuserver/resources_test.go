package qemuserver

import "testing"

func TestMemBytesCPUs(t *testing.T) {
	for v, want := range map[string]int64{"": 512 << 20, "2048": 2048 << 20, "current=1024": 1024 << 20, "bogus": 512 << 20} {
		conf := map[string]string{}
		if v != "" {
			conf["memory"] = v
		}
		if got := MemBytes(conf); got != want {
			t.Errorf("memory %q: MemBytes = %d, want %d", v, got, want)
		}
	}
	if got := CPUs(map[string]string{}); got != 1 {
		t.Errorf("CPUs() = %d", got)
	}
	if got := CPUs(map[string]string{"cores": "4", "sockets": "2"}); got != 8 {
		t.Errorf("CPUs(4 cores, 2 sockets) = %d", got)
	}
	if got := CPUs(map[string]string{"cores": "3"}); got != 3 {
		t.Errorf("CPUs(3 cores) = %d", got)
	}
}
