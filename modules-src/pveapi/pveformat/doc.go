// Package pveformat reads and writes the value syntaxes of PVE's API the
// way pve-common's PVE/JSONSchema.pm does, for the typed areas (qemu, HA,
// replication) to build on:
//
//   - property strings (`virtio=AA:…,bridge=vmbr0,tag=10`): Parse follows
//     parse_property_string (default key, key aliases such as a NIC model
//     naming the MAC, booleans normalised by parse_boolean, duplicate and
//     missing-key errors with PVE's wording); Print follows
//     print_property_string (default key first, then the other keys sorted,
//     disk sizes through format_size). Keys this package is not told about
//     are kept and printed back: a round trip loses nothing.
//   - sizes: ParseSize and FormatSize are parse_size / format_size.
//   - named formats: CheckFormat knows the cheap ones the typed areas meet
//     (pve-node, pve-vmid, mac-addr, ip, CIDR, pve-ipv4-config, disk-size,
//     urlencoded, pve-ha-resource-id, pve-calendar-event through package
//     calendarevent, …) with PVE's messages; a format it does not know is
//     accepted, never invented.
//   - urlencoded text: EncodeURL / DecodeURL as qemu-server stores `sshkeys`
//     (K12).
//
// Only the standard library and calendarevent; no request is sent from
// here.
package pveformat
