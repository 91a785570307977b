package labctl

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 12, storage as PVE does it, in a lab as `lab up` starts it: the
// storage calls act on the node (activation, content, sizes) and the API
// reports the version the node's packages have.
func TestLabStorageAsPVE(t *testing.T) {
	t.Parallel()
	lab := startLab(t, 9)

	t.Run("dir_activation", func(t *testing.T) {
		onNode(t, lab, "pve01", "pvesm add dir withbase --path /srv/withbase --content iso,snippets,rootdir")
		onNode(t, lab, "pve01", "test -d /srv/withbase/template/iso && test -d /srv/withbase/snippets && test -d /srv/withbase/private && test -d /srv/withbase/dump")
		r := run(t, lab, "pve01", "pvesm add dir nobase --path /srv/nobase --create-base-path 0")
		if r.ExitCode == 0 || !strings.Contains(r.Stderr, "create storage failed: unable to activate storage 'nobase' - directory '/srv/nobase' does not exist or is unreachable") {
			t.Errorf("missing path without create-base-path: %+v", r)
		}
		if out := onNode(t, lab, "pve01", "cat /etc/pve/storage.cfg; test ! -e /srv/nobase && echo ABSENT"); strings.Contains(out, "nobase") && !strings.HasSuffix(out, "ABSENT\n") {
			t.Errorf("a refused storage left traces:\n%s", out)
		}
	})

	t.Run("local_content_is_the_disk", func(t *testing.T) {
		onNode(t, lab, "pve02", "test -d /var/lib/vz/template/iso && test -d /var/lib/vz/dump && test -d /var/lib/vz/images")
		onNode(t, lab, "pve02", "pvesm set local --content iso,vztmpl,backup,import,snippets")
		// pvesm set does not activate; a status call does (storage_info), as
		// pvestatd does within a cycle (TestLabPvestatdAndUploadsS4): whichever
		// comes first, snippets/ is there after the status call.
		onNode(t, lab, "pve02", "pvesm status >/dev/null && test -d /var/lib/vz/snippets")
		onNode(t, lab, "pve02", "echo 'x: 1' > /var/lib/vz/snippets/user.yaml && "+
			"head -c 4096 /dev/zero > /var/lib/vz/template/iso/debian.iso && touch /var/lib/vz/template/iso/notes.txt")
		var vols []map[string]any
		if err := labAPI(lab, "pve02", "/nodes/pve02/storage/local/content", &vols); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, v := range vols {
			got[fmt.Sprint(v["volid"])] = fmt.Sprintf("%v %v %.0f", v["content"], v["format"], v["size"])
		}
		want := map[string]string{"local:snippets/user.yaml": "snippets snippet 5", "local:iso/debian.iso": "iso iso 4096"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("local's content: %v, want %v", got, want)
		}
		// One file volume, its ID with a slash in the URL (Content.pm's
		// {volume}); a DELETE removes the node's file (free_image).
		var info map[string]any
		if err := labAPI(lab, "pve02", "/nodes/pve02/storage/local/content/local:iso/debian.iso", &info); err != nil {
			t.Fatal(err)
		}
		if info["path"] != "/var/lib/vz/template/iso/debian.iso" || info["size"] != float64(4096) || info["format"] != "raw" {
			t.Errorf("volume info: %v", info)
		}
		if out := onNode(t, lab, "pve02", "pvesh delete /nodes/pve02/storage/local/content/local:snippets/user.yaml; sleep 3; test ! -e /var/lib/vz/snippets/user.yaml && echo GONE"); !strings.Contains(out, "GONE") {
			t.Errorf("DELETE of a snippet left the file: %s", out)
		}
	})

	t.Run("zfspool_and_sizes", func(t *testing.T) {
		r := run(t, lab, "pve03", "pvesm add zfspool tank --pool tank")
		if r.ExitCode == 0 || !strings.Contains(r.Stderr, "could not activate storage 'tank', zfs error: cannot import 'tank': no such pool available") {
			t.Errorf("zfspool without its pool: %+v", r)
		}
		// An exported pool is imported by the activation, as pve-storage does.
		onNode(t, lab, "pve03", "zpool create tank /dev/nvme0n1 && zpool export tank && pvesm add zfspool tank --pool tank && zpool list -H -o name tank")
		zfs := strings.Fields(onNode(t, lab, "pve03", "zfs get -Hp -o value available,used tank"))
		var st map[string]any
		if err := labAPI(lab, "pve03", "/nodes/pve03/storage/tank/status", &st); err != nil {
			t.Fatal(err)
		}
		num := func(v any) string { return fmt.Sprintf("%.0f", v) }
		if num(st["avail"]) != zfs[0] || num(st["used"]) != zfs[1] || st["active"] != float64(1) {
			t.Errorf("tank status %v, zfs says available %s used %s", st, zfs[0], zfs[1])
		}
		df := strings.Fields(onNode(t, lab, "pve03", "df -P -B1 /var/lib/vz | tail -n 1"))
		if err := labAPI(lab, "pve03", "/nodes/pve03/storage/local/status", &st); err != nil {
			t.Fatal(err)
		}
		if num(st["total"]) != df[1] {
			t.Errorf("local status total %v, df says %s", st["total"], df[1])
		}
	})

	t.Run("version_is_the_packages", func(t *testing.T) {
		check := func(when string) {
			pv := onNode(t, lab, "pve03", "pveversion")
			var v map[string]any
			if err := labAPI(lab, "pve03", "/version", &v); err != nil {
				t.Fatal(err)
			}
			var ns map[string]any
			if err := labAPI(lab, "pve03", "/nodes/pve03/status", &ns); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(pv, fmt.Sprint(ns["pveversion"], " ")) || !strings.HasPrefix(pv, fmt.Sprint("pve-manager/", v["version"], "/")) {
				t.Errorf("%s: pveversion says %q, /version %v, node status %v", when, pv, v["version"], ns["pveversion"])
			}
		}
		check("before the upgrade")
		onNode(t, lab, "pve03", `printf 'Types: deb\nURIs: http://download.proxmox.com/debian/pve\nSuites: trixie\nComponents: pve-no-subscription\nSigned-By: /usr/share/keyrings/proxmox-archive-keyring.gpg\n' > /etc/apt/sources.list.d/pve-no-subscription.sources && apt-get update -q >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y -q pve-manager >/dev/null`)
		if pv := onNode(t, lab, "pve03", "pveversion"); !strings.Contains(pv, "9.2.5") {
			t.Fatalf("the upgrade did not happen: %s", pv)
		}
		check("after the upgrade")
		pv := onNode(t, lab, "pve03", "pveversion -v")
		for _, want := range []string{"pve-manager: 9.2.5 (running version: 9.2.5/", "\nproxmox-kernel-6.14.8-2-pve-signed: 6.14.8-2\n",
			"\nproxmox-widget-toolkit: 5.0.5\n"} {
			if !strings.Contains(pv, want) {
				t.Errorf("pveversion -v lacks %q:\n%s", want, pv)
			}
		}
	})
}
