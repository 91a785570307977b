package ha

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
)

// The requested states of a resource (HA/Resources.pm; "enabled" is an
// old alias of started).
const (
	StateStarted  = "started"
	StateStopped  = "stopped"
	StateDisabled = "disabled"
	StateIgnored  = "ignored"
)

// Manages tells whether HA manages a guest whose resource is configured
// (or not) with requested state: HA::Config's service_check_ha_state, on
// which vm_is_ha_managed rests: "ignored service behave as if they were
// not managed", so qemu-server's and pve-container's start, stop and
// migrate act directly then (H4).
func Manages(configured bool, state string) bool { return configured && state != StateIgnored }

// Resource is one HA resource. Nil pointers are values the config does
// not set; WithDefaults fills PVE's defaults in.
type Resource struct {
	SID         SID
	State       string
	MaxRestart  *int
	MaxRelocate *int
	Comment     string
	Group       string // PVE 8, or PVE 9 before the groups are migrated
	Failback    *bool  // PVE 9
	Digest      string
}

// WithDefaults is the resource as the HA stack treats it
// (read_and_check_resources_config): state started, max_restart 1,
// max_relocate 1, failback on (on PVE 9; PVE 8 has no failback).
func (r Resource) WithDefaults(major int) Resource {
	if r.State == "" || r.State == "enabled" {
		r.State = StateStarted
	}
	one := 1
	if r.MaxRestart == nil {
		r.MaxRestart = &one
	}
	if r.MaxRelocate == nil {
		r.MaxRelocate = &one
	}
	if r.Failback == nil && Gates(major).Failback {
		t := true
		r.Failback = &t
	}
	return r
}

type resourceRow struct {
	SID         string `json:"sid"`
	State       string `json:"state"`
	MaxRestart  *int   `json:"max_restart"`
	MaxRelocate *int   `json:"max_relocate"`
	Comment     string `json:"comment"`
	Group       string `json:"group"`
	Failback    *bool  `json:"failback"`
	Digest      string `json:"digest"`
}

func (r resourceRow) resource() (Resource, error) {
	sid, err := ParseSID(r.SID)
	if err != nil {
		return Resource{}, err
	}
	return Resource{SID: sid, State: r.State, MaxRestart: r.MaxRestart, MaxRelocate: r.MaxRelocate, Comment: r.Comment,
		Group: r.Group, Failback: r.Failback, Digest: r.Digest}, nil
}

// Resources reads GET /cluster/ha/resources (values as configured, no
// defaults filled), sorted by SID.
func Resources(ctx context.Context, g pveapi.Getter) ([]Resource, error) {
	return readList(ctx, g, "/cluster/ha/resources", resourceRow.resource,
		func(a, b Resource) int { return strings.Compare(a.SID.String(), b.SID.String()) })
}

// ReadResource reads one resource (GET /cluster/ha/resources/{sid}), as
// configured; found is false when HA has none. PVE answers that with a
// 500 "no such resource '<sid>'" (API2/HA/Resources.pm $api_copy_config);
// any other failure is an error.
func ReadResource(ctx context.Context, g pveapi.Getter, sid SID) (r Resource, found bool, err error) {
	var row resourceRow
	err = g.Get(ctx, pveapi.Path("/cluster/ha/resources/%s", sid.String()), nil, &row)
	switch {
	case err == nil:
		if row.SID == "" {
			row.SID = sid.String()
		}
		r, err = row.resource()
		return r, err == nil, err
	case NoSuchResource(err, sid):
		return Resource{}, false, nil
	}
	return Resource{}, false, err
}

// NoSuchResource tells whether err is PVE's answer for a resource HA
// does not have: $api_copy_config's die, a 500 over HTTP (pvesh, in local
// mode, prints no status), worded with the resource's SID; or a 404.
func NoSuchResource(err error, sid SID) bool {
	var e *pveapi.Error
	if !errors.As(err, &e) {
		return false
	}
	if e.Status == http.StatusNotFound {
		return true
	}
	return (e.Status == http.StatusInternalServerError || e.Status == 0) &&
		strings.TrimSpace(e.Message) == fmt.Sprintf("no such resource '%s'", sid)
}

// FindResource returns the resource of sid in list.
func FindResource(list []Resource, sid SID) (Resource, bool) {
	for _, r := range list {
		if r.SID == sid {
			return r, true
		}
	}
	return Resource{}, false
}

func (r Resource) params(major int) (url.Values, error) {
	q := url.Values{}
	if r.State != "" {
		q.Set("state", r.State)
	}
	if r.MaxRestart != nil {
		q.Set("max_restart", strconv.Itoa(*r.MaxRestart))
	}
	if r.MaxRelocate != nil {
		q.Set("max_relocate", strconv.Itoa(*r.MaxRelocate))
	}
	if r.Comment != "" {
		q.Set("comment", r.Comment)
	}
	if r.Group != "" {
		q.Set("group", r.Group)
	}
	if r.Failback != nil {
		if !Gates(major).Failback {
			return nil, fmt.Errorf("failback: PVE %d has no failback setting (PVE 9 and newer; on PVE 8 it is the group's nofailback)", major)
		}
		q.Set("failback", boolStr(*r.Failback))
	}
	return q, nil
}

// CreateResource is POST /cluster/ha/resources. The SID must be resolved.
func CreateResource(r Resource, major int) (apischema.Request, error) {
	if !r.SID.Resolved() {
		return apischema.Request{}, fmt.Errorf("sid: %s has no type yet (Resolve it from the guest list)", r.SID)
	}
	q, err := r.params(major)
	if err != nil {
		return apischema.Request{}, err
	}
	q.Set("sid", r.SID.String())
	return apischema.New(http.MethodPost, "/cluster/ha/resources", q), nil
}

// UpdateResource is PUT /cluster/ha/resources/{sid}: the values of r that
// are set, and del, the keys to reset to PVE's default (comment, group,
// failback, max_restart, max_relocate).
func UpdateResource(r Resource, del []string, major int) (apischema.Request, error) {
	q, err := r.params(major)
	if err != nil {
		return apischema.Request{}, err
	}
	if len(del) > 0 {
		d := slices.Clone(del)
		slices.Sort(d)
		q.Set("delete", strings.Join(d, ","))
	}
	if r.Digest != "" {
		q.Set("digest", r.Digest)
	}
	return apischema.New(http.MethodPut, "/cluster/ha/resources/{sid}", q, r.SID.String()), nil
}

// DeleteResource is DELETE /cluster/ha/resources/{sid}.
func DeleteResource(sid SID) apischema.Request {
	return apischema.New(http.MethodDelete, "/cluster/ha/resources/{sid}", nil, sid.String())
}

func boolStr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// MigrateResource is POST /cluster/ha/resources/{sid}/migrate (live, for a
// running VM) or, with relocate, …/relocate (stop, move, start): the HA
// manager moves the guest, not the caller (H4).
func MigrateResource(sid SID, node string, relocate bool) apischema.Request {
	action := "migrate"
	if relocate {
		action = "relocate"
	}
	return apischema.New(http.MethodPost, "/cluster/ha/resources/{sid}/"+action, url.Values{"node": {node}}, sid.String())
}
