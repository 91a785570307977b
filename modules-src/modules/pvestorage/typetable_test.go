package pvestorage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// sampleValue is a schema-valid value for key (what the test sends).
func sampleValue(key string, o optSchema, t storageType) string {
	switch key {
	case "content":
		return t.Content[0]
	case "nodes":
		return "pve01"
	case "encryption-key":
		return `{"kdf":null,"data":"AAAA","fingerprint":"aa:bb"}`
	case "master-pubkey":
		return masterPubkeyParam(masterA)
	case "fingerprint":
		return strings.TrimSuffix(strings.Repeat("AB:", 32), ":")
	case "is_mountpoint":
		return "no"
	}
	switch {
	case o.Type == "boolean":
		return "0"
	case o.Type == "integer" && len(o.Enum) > 0:
		return o.Enum[0]
	case o.Type == "integer" && o.Min != nil:
		return fmt.Sprint(max(*o.Min, 1))
	case o.Type == "integer":
		return "1"
	case len(o.Enum) > 0:
		return o.Enum[0]
	}
	switch o.Format {
	case "pve-storage-path":
		return "/srv/sample"
	case "pve-storage-server":
		return "192.0.2.5"
	case "pve-storage-vgname":
		return "vg0"
	case "pve-dir-override-list":
		return "iso=/isos"
	case "pve-storage-options":
		return "vers=4.2"
	case "prune-backups":
		return "keep-last=1"
	case "property-string":
		return o.Keys[0] + "=100"
	}
	return "sample"
}

// Issue 15 (lab), issue 27 §2: the module and the simulator read one
// storage-type table (pveapi/storagetype, itself checked against
// pve-storage's plugins there); this checks that what the module offers
// from it is what the simulated API handlers take, with the schema's
// formats and updatability on top. For every type and PVE version, each
// option the module offers is one PVE takes at creation, each content type
// it allows PVE accepts, each option it treats as fixed PVE refuses to
// change and each it updates PVE updates. Storages are created disabled, so
// no activation (mount, PBS login) is involved.
func TestTypeTableAgreesWithTheSimulator(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		c := w.client()
		ctx := context.Background()
		schema := schemaFor(v)
		n := 0
		post := func(typ string, extra url.Values) error {
			n++
			p := url.Values{"storage": {fmt.Sprintf("s%d", n)}, "type": {typ}, "disable": {"1"}}
			for _, k := range storageTypes[typ].MustGive() {
				p.Set(k, sampleValue(k, schema[k], storageTypes[typ]))
			}
			for k, vs := range extra {
				p[k] = vs
			}
			if extra.Has("master-pubkey") && !extra.Has("encryption-key") {
				p.Set("encryption-key", sampleValue("encryption-key", schema["encryption-key"], storageTypes[typ]))
			}
			return send(ctx, c, "POST", "/storage", p)
		}
		for _, typ := range typeNames {
			st := storageTypes[typ]
			for _, key := range allKeys() {
				if !st.Allows(key, v) || slices.Contains(st.MustGive(), key) || key == "base" || key == "disable" {
					continue // base needs a volume of another storage
				}
				if err := post(typ, url.Values{key: {sampleValue(key, schema[key], st)}}); err != nil {
					t.Errorf("PVE %d %s: the module offers %s, the simulator refuses it: %v", v, typ, optionName(key), err)
				}
			}
			for _, item := range st.Content {
				if err := post(typ, url.Values{"content": {item}}); err != nil {
					t.Errorf("PVE %d %s: the module allows content %s, the simulator refuses it: %v", v, typ, item, err)
				}
			}
			// One storage with every updatable option the module offers set.
			if err := post(typ, nil); err != nil {
				t.Fatalf("PVE %d %s: %v", v, typ, err)
			}
			id := fmt.Sprintf("s%d", n)
			for _, key := range allKeys() {
				if !st.Allows(key, v) || key == "base" {
					continue
				}
				fixed := slices.Contains(st.Fixed, key) || !schema[key].Updatable
				err := send(ctx, c, "PUT", "/storage/"+id, url.Values{key: {sampleValue(key, schema[key], st)}})
				switch {
				case fixed && (err == nil || !strings.Contains(err.Error(), "fixed parameter") && !badRequest(err)):
					t.Errorf("PVE %d %s: the module treats %s as fixed, the simulator changes it (%v)", v, typ, optionName(key), err)
				case !fixed && err != nil:
					t.Errorf("PVE %d %s: the module updates %s, the simulator refuses: %v", v, typ, optionName(key), err)
				}
			}
		}
	}
}

func badRequest(err error) bool {
	var e *pveapi.Error
	return errors.As(err, &e) && e.Status == 400
}

// send is one write by hand whose refusal the test wants to see.
func send(ctx context.Context, c *pveapi.Client, method, path string, params url.Values) error {
	_, err := c.Dispatch(ctx, pveapi.Write{Method: method, Path: path, Params: params, What: "by hand: " + method + " " + path,
		Settle: func(context.Context) (bool, error) { return false, nil }, SettleWithin: time.Millisecond})
	return err
}
