package pvebase

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/apt"
	"github.com/gopve/proxmox/modules-src/host/systemd"
)

const (
	proxmoxlib  = "/usr/share/javascript/proxmox-widget-toolkit/proxmoxlib.js"
	toolkitPkg  = "proxmox-widget-toolkit"
	hookConf    = "/etc/apt/apt.conf.d/99gopve-subscription-notice"
	hookScript  = "/usr/local/sbin/gopve-subscription-notice"
	patchedMark = "void({ //"
)

// noticeSummary is the same whether the patch is predicted after a pending
// toolkit upgrade or planned on the file as it is, so check mode and the real
// run list identical changes.
const noticeSummary = "remove the subscription notice from " + proxmoxlib + " and restart pveproxy"

// nag is the start of the dialog the web UI shows without a subscription;
// replacing it with "void({ //" turns the call into a no-op expression and
// comments out the rest of its first line, the well-known patch the seed's
// role applied.
var nag = regexp.MustCompile(`Ext\.Msg\.show\(\{\s+title: gettext\('No valid sub`)

// hookConfText runs the script after every dpkg run; the script is a no-op
// when the file is already patched.
const hookConfText = `// Managed by gopve.proxmox pve_base (subscription_notice_hook): re-apply the
// subscription notice patch when a package upgrade rewrites proxmoxlib.js.
DPkg::Post-Invoke { "if [ -x ` + hookScript + ` ]; then ` + hookScript + `; fi"; };
`

// The sed expression is the same replacement as nag (GNU sed -z reads the
// whole file as one record, so \s+ can span the line break).
const hookScriptText = `#!/bin/sh
# Managed by gopve.proxmox pve_base (subscription_notice_hook).
# Re-applies the subscription notice patch after proxmox-widget-toolkit
# upgrades rewrite proxmoxlib.js, and restarts pveproxy only if it changed.
f=` + proxmoxlib + `
[ -f "$f" ] || exit 0
before=$(cksum < "$f")
sed -z -E -i "s/Ext\.Msg\.show\(\{\s+title: gettext\('No valid sub/void({ \/\//" "$f" || exit 0
[ "$before" = "$(cksum < "$f")" ] || systemctl try-restart pveproxy.service || true
exit 0
`

// planNotice is stage 5, after the upgrade on purpose (B3).
func (m *base) planNotice(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
	var changes []ansible.Change
	hookCh, hookInPlace, err := m.planHook()
	if err != nil {
		return nil, err
	}
	if m.p.RemoveNotice {
		ch, err := m.planPatch(ctx, w, hookInPlace)
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch...)
	}
	return append(changes, hookCh...), nil
}

// toolkitReplaced tells whether a change planned earlier in this run
// installs another proxmox-widget-toolkit, whose package ships a fresh,
// unpatched proxmoxlib.js (B3). Only check mode can see that: in a real run
// the upgrade has already happened and the file on disk says it all.
func toolkitReplaced(ctx context.Context, w *ansible.World, installed func(context.Context) (string, error)) (bool, error) {
	next, ok := installedVersion(toolkitPkg).Predicted(w)
	if !ok {
		return false, nil
	}
	now, err := installed(ctx)
	if err != nil {
		return false, err
	}
	return next != now, nil
}

func (m *base) planPatch(ctx context.Context, w *ansible.World, hookInPlace bool) ([]ansible.Change, error) {
	cur, err := m.env.Root.ReadFile(proxmoxlib)
	if err != nil {
		return nil, err
	}
	replaced, err := toolkitReplaced(ctx, w, func(ctx context.Context) (string, error) {
		v, err := apt.Installed(ctx, m.env.Runner, []string{toolkitPkg})
		return v[toolkitPkg], err
	})
	if err != nil {
		return nil, err
	}
	if replaced {
		// The upgrade will bring back the notice, and the patch will be
		// re-applied after it — by the hook if it is already installed,
		// else by this stage.
		if hookInPlace {
			return nil, nil
		}
		return []ansible.Change{{
			ID:      "notice:patch",
			Summary: noticeSummary,
			Apply:   func(context.Context) error { return fmt.Errorf("internal error: predicted change applied") },
			Verify:  func(context.Context) error { return nil },
		}}, nil
	}
	if !cur.Exists {
		m.r.Warn(proxmoxlib + " does not exist (is " + toolkitPkg + " installed?); subscription notice left alone")
		return nil, nil
	}
	if !nag.Match(cur.Content) {
		if !bytes.Contains(cur.Content, []byte(patchedMark)) {
			m.r.Warn(proxmoxlib + " does not contain the expected subscription check (changed upstream?); nothing patched")
			return nil, nil
		}
		return m.planPendingRestart(ctx, cur)
	}
	desired := nag.ReplaceAll(cur.Content, []byte(patchedMark))
	fc := host.PlanFrom(cur, desired, 0)
	fc.Backup = true
	ch := m.fileChange("notice:patch", noticeSummary, fc)
	// The JavaScript diff is a 500 kB file; show only the lines that change.
	ch.Diff = &ansible.Diff{Before: nagLines(cur.Content), After: nagLines(desired), BeforeHeader: proxmoxlib, AfterHeader: proxmoxlib}
	// Two actions, one effect: the patch only shows once pveproxy has
	// restarted. If the restart fails, the file is put back, so the next
	// run patches and restarts again (host.WriteThenAct).
	ch.Apply = func(ctx context.Context) error {
		_, err := m.env.Root.WriteThenAct(ctx, fc, m.env.Now(), m.restartProxy)
		return fileApplyError(err)
	}
	ch.Verify = func(ctx context.Context) error {
		if err := m.env.Root.VerifyFile(fc); err != nil {
			return err
		}
		return m.verifyProxyRestarted(ctx)
	}
	return []ansible.Change{ch}, nil
}

const proxyUnit = "pveproxy.service"

func (m *base) restartProxy(ctx context.Context) error {
	_, err := m.env.Runner.Run(ctx, host.Command{Name: "systemctl", Args: []string{"restart", proxyUnit}})
	return err
}

// restartPending tells whether pveproxy has not been (re)started since
// proxmoxlib.js was last written: then it still serves the old file. The
// timestamp systemd prints has second resolution, so the file's time is
// compared at that resolution too.
func (m *base) restartPending(ctx context.Context, lib host.FileState) (pending bool, why string, err error) {
	since, active, err := systemd.ActiveSince(ctx, m.env.Runner, proxyUnit)
	if err != nil {
		return false, "", err
	}
	if !active {
		return true, proxyUnit + " is not running", nil
	}
	if since.Before(lib.ModTime.Truncate(time.Second)) {
		return true, fmt.Sprintf("%s was patched at %s, after %s started (%s)", proxmoxlib, lib.ModTime.UTC().Format(time.RFC3339), proxyUnit, since.UTC().Format(time.RFC3339)), nil
	}
	return false, "", nil
}

// planPendingRestart finds the second half of an earlier patch that never
// happened (the restart failed and the undo did too, or the run was killed
// between the two): the file is patched, pveproxy older than it.
func (m *base) planPendingRestart(ctx context.Context, lib host.FileState) ([]ansible.Change, error) {
	pending, why, err := m.restartPending(ctx, lib)
	if err != nil || !pending {
		return nil, err
	}
	return []ansible.Change{{
		ID:      "notice:restart",
		Summary: "restart " + proxyUnit + " (" + why + ")",
		Apply:   m.restartProxy,
		Verify:  m.verifyProxyRestarted,
	}}, nil
}

// verifyProxyRestarted reads back that pveproxy runs the patched file: it
// is active and started no earlier than the file was written.
func (m *base) verifyProxyRestarted(ctx context.Context) error {
	lib, err := m.env.Root.ReadFile(proxmoxlib)
	if err != nil {
		return err
	}
	if pending, why, err := m.restartPending(ctx, lib); err != nil || pending {
		if err == nil {
			err = fmt.Errorf("pveproxy does not serve the patched file: %s", why)
		}
		return err
	}
	return nil
}

// nagLines returns the lines around the subscription check, for the diff.
func nagLines(content []byte) string {
	loc := nag.FindIndex(content)
	if loc == nil {
		loc = []int{bytes.Index(content, []byte(patchedMark)), 0}
		if loc[0] < 0 {
			return ""
		}
		loc[1] = loc[0] + len(patchedMark)
	}
	start := bytes.LastIndexByte(content[:loc[0]], '\n') + 1
	end := loc[1]
	if i := bytes.IndexByte(content[end:], '\n'); i >= 0 {
		end += i + 1
	}
	return string(content[start:end])
}

// planHook installs or removes the DPkg::Post-Invoke hook. hookInPlace says
// whether the hook is already installed as wanted (it then re-applies the
// patch after a toolkit upgrade in this very run).
func (m *base) planHook() (changes []ansible.Change, hookInPlace bool, err error) {
	files := []struct {
		path string
		text string
		mode fs.FileMode
	}{{hookScript, hookScriptText, 0o755}, {hookConf, hookConfText, 0o644}}
	inPlace := true
	for _, f := range files {
		cur, err := m.env.Root.ReadFile(f.path)
		if err != nil {
			return nil, false, err
		}
		if !m.p.NoticeHook {
			if cur.Exists {
				p := f.path
				changes = append(changes, ansible.Change{
					ID:      "notice:hook-remove:" + p,
					Summary: "remove " + p + " (subscription_notice_hook is false)",
					Diff:    &ansible.Diff{Before: string(cur.Content), After: "", BeforeHeader: p, AfterHeader: p + " (absent)"},
					Apply:   func(ctx context.Context) error { return m.env.Root.Remove(ctx, p) },
					Verify: func(context.Context) error {
						st, err := m.env.Root.ReadFile(p)
						if err == nil && st.Exists {
							err = fmt.Errorf("%s still exists", p)
						}
						return err
					},
				})
			}
			inPlace = false
			continue
		}
		fc := host.PlanFrom(cur, []byte(f.text), f.mode)
		if fc != nil {
			inPlace = false
			changes = append(changes, m.fileChange("notice:hook:"+f.path, "install the subscription notice hook "+f.path, fc))
		}
	}
	return changes, inPlace, nil
}
