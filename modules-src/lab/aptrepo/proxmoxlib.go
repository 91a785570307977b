package aptrepo

import "fmt"

// ProxmoxLibJS is where proxmox-widget-toolkit installs the UI library whose
// subscription check users patch away (B3).
const ProxmoxLibJS = "/usr/share/javascript/proxmox-widget-toolkit/proxmoxlib.js"

// NagMarker is the text of the subscription notice; present in every
// version the toolkit package ships, so an upgrade restores it (B3).
const NagMarker = "title: gettext('No valid subscription')"

// ProxmoxLib returns the proxmoxlib.js a toolkit version ships. Only the
// subscription check matters to the lab; it keeps the shape of the real code
// (tabs, line breaks, the status test and the Ext.Msg.show call) so the
// patches users apply with replace/sed match here as they do on a real node.
// Each version differs in its header, so an upgrade really rewrites the file.
func ProxmoxLib(version string) string {
	return fmt.Sprintf(`// proxmox-widget-toolkit %s (gopve lab stand-in)
Ext.ns('Proxmox');
Ext.ns('Proxmox.Setup');

Ext.define('Proxmox.Utils', {
    utilities: {
	checked_command: function(orig_cmd) {
	    Proxmox.Utils.API2Request(
		{
		    url: '/nodes/localhost/subscription',
		    method: 'GET',
		    failure: function(response, opts) {
			Ext.Msg.alert(gettext('Error'), response.htmlStatus);
		    },
		    success: function(response, opts) {
			let res = response.result;
			if (res === null || res === undefined || !res || res
			    .data.status.toLowerCase() !== 'active') {
			    Ext.Msg.show({
				%s,
				icon: Ext.Msg.WARNING,
				message: Proxmox.Utils.getNoSubKeyHtml(res.data.url),
				buttons: Ext.Msg.OK,
				callback: function(btn) {
				    if (btn !== 'ok') {
					return;
				    }
				    orig_cmd();
				},
			    });
			} else {
			    orig_cmd();
			}
		    },
		},
	    );
	},
    },
});
`, version, NagMarker)
}
