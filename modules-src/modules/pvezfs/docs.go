package pvezfs

const examples = `- name: The seed's pool, on the NVMe disk
  gopve.proxmox.pve_zfs:
    name: nvme-vm
    devices: [/dev/nvme0n1]

- name: A mirror with zstd compression and a weekly scrub
  gopve.proxmox.pve_zfs:
    name: tank
    layout: mirror
    devices:
      - /dev/disk/by-id/wwn-0x5000c500a1b2c3d4
      - /dev/disk/by-id/wwn-0x5000c500a1b2c3d5
    properties:
      compression: zstd
    scrub: weekly

- name: Reuse a disk that held an old filesystem (destroys it)
  gopve.proxmox.pve_zfs:
    name: scratch
    devices: [/dev/sdb]
    wipe_signatures: true
`

const returnDoc = `devices:
  description: The devices as given, their kernel names and the stable by-id names the pool uses.
  returned: always
  type: list
  elements: dict
  sample: [{given: /dev/nvme0n1, kernel: /dev/nvme0n1, by_id: /dev/disk/by-id/nvme-eui.0025385b21404321}]
pool:
  description: The pool as read back after the run (exists is false in check mode before creation, and after a destroy).
  returned: always
  type: dict
  contains:
    name: {description: Pool name, type: str}
    exists: {description: Whether the pool exists now, type: bool}
    health: {description: "ONLINE, DEGRADED, …", type: str}
    size: {description: Size in bytes, type: int}
    allocated: {description: Allocated bytes, type: int}
    free: {description: Free bytes, type: int}
    layout: {description: "single, stripe, mirror, raidz1, raidz2 or raidz3; mixed(TYPES) for vdevs of several types", type: str}
    vdevs: {description: Top-level vdevs with their device paths, type: list, elements: dict}
    ashift: {description: The pool's ashift property, type: str}
    properties: {description: Dataset properties with value and source, type: dict}
scrub_timer:
  description: The scrub timer unit enabled for the pool (empty when scrub is disabled).
  returned: always
  type: str
  sample: zfs-scrub-monthly@nvme-vm.timer
commands:
  description: The commands the module ran on the node (command line and exit code), oldest first.
  returned: with -vv or more
  type: list
  elements: dict
`
