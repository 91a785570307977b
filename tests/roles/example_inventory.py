"""Checks a run of gopve.proxmox.site over playbooks/inventory (issue 19).

Usage: example_inventory.py INVENTORY.json SITE.json
INVENTORY.json is `ansible-inventory --list`; SITE.json is the json stdout
callback's record of the site run with the capture stubs (each module
returns the arguments it got). What is checked is what the example inventory
promises a user: the seed's group layout drives every phase on the pve group
and nothing else, pve_cluster_primary is the one that creates the cluster and
runs the run-once storage tasks (S3), and the group variables reach the
modules under the seed's names.
"""
import json
import sys

MEMBERS = ["pve01", "pve02", "pve03"]


def fail(msg):
    sys.exit(f"example inventory: {msg}")


def main():
    inv = json.load(open(sys.argv[1]))
    site = json.load(open(sys.argv[2]))
    if sorted(inv["pve"]["hosts"]) != MEMBERS:
        fail(f"group pve is {inv['pve']['hosts']}, want {MEMBERS}")
    hv = inv["_meta"]["hostvars"]
    for h in MEMBERS:
        for var in ("ansible_host", "pve_cluster_primary", "zfs_pool_name", "zfs_pool_device", "lab_domain"):
            if var not in hv[h]:
                fail(f"{h} has no {var}")
    if sorted(site["stats"]) != MEMBERS:
        fail(f"the site ran on {sorted(site['stats'])}, want the pve group {MEMBERS} only (pbs01 is not a member)")
    for h, s in site["stats"].items():
        if s["failures"] or s["unreachable"]:
            fail(f"{h} failed: {s}")

    calls = {}  # module -> task name -> {host: args}
    for play in site["plays"]:
        for task in play["tasks"]:
            for host, r in task["hosts"].items():
                action = r.get("action", "")
                if action.startswith("gopve.proxmox.") and not r.get("skipped"):
                    # A loop task (the clone and HA roles: one item a VM)
                    # records each item's result under results.
                    for item in r.get("results", [r]):
                        calls.setdefault(action.split(".")[-1], {}).setdefault(task["task"]["name"], {})[host] = item["args"]
    for module in ("pve_base", "pve_zfs", "pve_cluster", "pve_storage"):
        if module not in calls:
            fail(f"no task of gopve.proxmox.{module} ran")

    (base,) = calls["pve_base"].values()
    (zfs,) = calls["pve_zfs"].values()
    for h in MEMBERS:
        if base[h].get("zfs_arc_max") != "4G":
            fail(f"{h}: pve_base zfs_arc_max {base[h].get('zfs_arc_max')!r}, want '4G' from zfs_arc_max_gb: 4")
        if zfs[h]["name"] != "nvme-vm" or zfs[h]["devices"] != ["/dev/nvme0n1"]:
            fail(f"{h}: pve_zfs got {zfs[h]['name']} {zfs[h]['devices']}, want nvme-vm on /dev/nvme0n1")

    forming = {t: a for t, a in calls["pve_cluster"].items() if any(x.get("form", True) for x in a.values())}
    created = [a for t, a in forming.items() if t.endswith("Create the cluster on the primary")]
    joined = [a for t, a in forming.items() if t.endswith("Join the other nodes, one at a time")]
    if not created or sorted(created[0]) != ["pve01"]:
        fail(f"the cluster is created on {created and sorted(created[0])}, want pve_cluster_primary pve01 only")
    if not joined or sorted(joined[0]) != ["pve02", "pve03"]:
        fail(f"joins ran on {joined and sorted(joined[0])}, want pve02 and pve03")
    want_nodes = [{"name": f"pve0{i}", "address": f"192.168.3.1{i}"} for i in (1, 2, 3)]
    for h, a in {**created[0], **joined[0]}.items():
        if a["primary"] != "pve01" or a["domain"] != "lab.example":
            fail(f"{h}: pve_cluster primary {a['primary']!r} domain {a['domain']!r}, want pve01 and lab.example")
        if sorted(a["nodes"], key=lambda n: n["name"]) != want_nodes:
            fail(f"{h}: pve_cluster nodes {a['nodes']}, want the pve group's ansible_host addresses")

    for task, by_host in calls["pve_storage"].items():
        if sorted(by_host) != ["pve01"]:
            fail(f"{task} ran on {sorted(by_host)}, want once, on pve01")
    zfs_storage = [a["pve01"] for a in calls["pve_storage"].values() if a["pve01"].get("type") == "zfspool"]
    if not zfs_storage or zfs_storage[0]["storage"] != "nvme-vm" or zfs_storage[0]["nodes"] != MEMBERS:
        fail(f"zfspool storage arguments {zfs_storage}, want nvme-vm on {MEMBERS}")

    # The clone and HA phases (seeds 001 and 003): run once, on the primary,
    # with the example's VM (seed 003's Dokploy VM) merged over the defaults.
    for module in ("pve_clone", "pve_ha"):
        if module not in calls:
            fail(f"no task of gopve.proxmox.{module} ran")
        for task, by_host in calls[module].items():
            if sorted(by_host) != ["pve01"]:
                fail(f"{task} ran on {sorted(by_host)}, want once, on pve01")
    (clone,) = calls["pve_clone"].values()
    vm = clone["pve01"]
    want = {"vmid": 201, "name": "dokploy", "node": "pve02", "template": "9000", "full": True,
            "storage": "nvme-vm", "cores": 2, "memory": 4096, "disks": {"scsi0": "40G"}}
    got = {k: vm.get(k) for k in want}
    if {k: str(v) for k, v in got.items()} != {k: str(v) for k, v in want.items()}:
        fail(f"pve_clone got {got}, want {want} (pve_clone_vms merged over pve_clone_defaults)")
    (ha,) = calls["pve_ha"].values()
    guest = ha["pve01"]
    if str(guest.get("vmid")) != "201" or guest.get("node_affinity") != {"pve02": 100} or guest.get("wait_first_sync") is not True:
        fail(f"pve_ha got {guest}, want vmid 201 at home on pve02 with the role's defaults (wait_first_sync)")
    print("example inventory: every phase ran on the pve group with the seed's variables")


if __name__ == "__main__":
    main()
