# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gopve.proxmox.plan: the whole run as one table, phase x host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: plan
type: aggregate
short_description: The run as one table, phase by host, with what was predicted, changed and verified
description:
  - At the end of a run, prints one table with a row per phase and a column per host. A phase is
    the gopve.proxmox module that ran (base, zfs, cluster, storage, clone, container, ha); other modules'
    tasks are counted under C(other). In check mode a cell counts the changes predicted; in a real run the changes
    made, and whether every one was read back as promised.
  - Optionally writes the same data as JSON, for CI gates, for example to fail a pipeline when a
    check run predicts a change in the cluster phase. The JSON also lists every task and host
    (phase, task name, changed, failed, the changes listed), so a check run's prediction can be
    compared with the real run task by task.
  - Opt-in, beside the usual stdout callback.
requirements:
  - enable it with C(callbacks_enabled = gopve.proxmox.plan) in ansible.cfg, or
    ANSIBLE_CALLBACKS_ENABLED=gopve.proxmox.plan
options:
  json_path:
    description:
      - Where to write the plan as JSON. Not written when unset.
    type: path
    env:
      - name: GOPVE_PLAN_JSON
    ini:
      - section: callback_gopve_plan
        key: json_path
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = gopve.proxmox.plan
# [callback_gopve_plan]
# json_path = plan.json

# A CI gate on the check run's JSON:
#   jq -e '.phases.cluster | all(.[]; .changes == 0)' plan.json
"""

import json
import os

from ansible import context
from ansible.plugins.callback import CallbackBase

COLLECTION = "gopve.proxmox."
# Module name -> phase, in the order of the site playbook.
PHASES = ["base", "zfs", "cluster", "access", "storage", "clone", "container", "ha"]


def phase_of(action):
    """The phase a task's action belongs to: pve_<phase> for our modules,
    the short module name for our other modules, "other" for the rest."""
    name = action or ""
    if name.startswith(COLLECTION):
        name = name[len(COLLECTION):]
    elif "." in name:
        return "other"
    if name.startswith("pve_") and name[4:] in PHASES:
        return name[4:]
    if action and action.startswith(COLLECTION):
        return name
    return "other"


class Cell(object):
    """What one host did in one phase."""

    def __init__(self):
        self.tasks = 0
        self.changed_tasks = 0
        self.changes = []  # summaries, as the modules list them
        self.failed = 0
        self.unreachable = 0
        self.unverified = []
        self.warnings = 0
        self.assumed = []  # check mode: what the modules assumed earlier tasks create (not_yet)

    def add(self, res, failed=False, unreachable=False):
        self.tasks += 1
        if unreachable:
            self.unreachable += 1
            return
        if res.get("changed"):
            self.changed_tasks += 1
            listed = res.get("changes")
            if isinstance(listed, list) and listed:
                self.changes.extend(str(c) for c in listed)
            else:
                self.changes.append(str(res.get("msg") or "changed"))
        if failed:
            self.failed += 1
            unv = res.get("changes_unverified")
            if isinstance(unv, list):
                self.unverified.extend(str(c) for c in unv)
            elif res.get("changed"):
                # Not one of ours: nothing says what was read back.
                self.unverified.append(str(res.get("msg") or "changed, then failed"))
        if res.get("warnings"):
            self.warnings += len(res["warnings"])
        for a in res.get("not_yet") or []:
            if isinstance(a, dict) and a.get("object") and a["object"] not in self.assumed:
                self.assumed.append(str(a["object"]))

    def as_dict(self):
        return {
            "tasks": self.tasks, "changed_tasks": self.changed_tasks, "changes": len(self.changes),
            "change_list": self.changes, "failed": self.failed, "unreachable": self.unreachable,
            "unverified": self.unverified, "warnings": self.warnings, "assumed": self.assumed,
            "verified": self.failed == 0 and self.unreachable == 0 and not self.unverified,
        }

    def text(self, check):
        if self.unreachable:
            return "UNREACHABLE"
        if self.failed:
            s = "FAILED"
            if self.unverified:
                s += " (%d unverified)" % len(self.unverified)
            elif self.changes:
                s += " (%d made)" % len(self.changes)
            return s
        if not self.changes:
            return "ok"
        return "%d %s" % (len(self.changes), "predicted" if check else "verified")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gopve.proxmox.plan"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self.cells = {}  # (phase, host) -> Cell
        self.hosts = []
        self.tasks = []  # one entry per task and host, in the order they ended
        # --check on the command line; a task's own check_mode is not
        # followed (a run that mixes both is neither a plan nor a run).
        self.check = bool(context.CLIARGS.get("check", False))

    def _cell(self, result):
        host = result._host.get_name()
        if host not in self.hosts:
            self.hosts.append(host)
            self.hosts.sort()
        phase = phase_of(result._task.action)
        return self.cells.setdefault((phase, host), Cell())

    def _record(self, result, failed=False, unreachable=False):
        res = result._result or {}
        if res.get("skipped"):
            return
        if result._task.action in ("ansible.builtin.assert", "assert", "ansible.builtin.debug", "debug",
                                   "ansible.builtin.set_fact", "set_fact", "ansible.builtin.meta", "meta"):
            # Tasks that look at the run, not at a host.
            if not failed:
                return
        listed = res.get("changes") if isinstance(res.get("changes"), list) else []
        if "results" in res and isinstance(res["results"], list):  # a loop: its items' changes
            listed = [c for item in res["results"]
                      if isinstance(item, dict) and not item.get("skipped") and isinstance(item.get("changes"), list)
                      for c in item["changes"]]
        self.tasks.append({
            "phase": phase_of(result._task.action), "host": result._host.get_name(),
            "task": result._task.get_name(), "changed": bool(res.get("changed")),
            "failed": bool(failed or unreachable),
            "changes": [str(c) for c in listed],
        })
        if "results" in res and isinstance(res["results"], list):  # a loop
            for item in res["results"]:
                if isinstance(item, dict) and not item.get("skipped"):
                    self._cell(result).add(item, failed=bool(item.get("failed")))
            return
        self._cell(result).add(res, failed=failed, unreachable=unreachable)

    def v2_runner_on_ok(self, result):
        self._record(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, failed=True)

    def v2_runner_on_unreachable(self, result):
        self._record(result, unreachable=True)

    def _phases(self):
        seen = set(p for p, _ in self.cells)
        order = [p for p in PHASES if p in seen]
        order += sorted(p for p in seen if p not in PHASES and p != "other")
        if "other" in seen:
            order.append("other")
        return order

    def plan(self):
        check = self.check
        phases = self._phases()
        data = {"mode": "check" if check else "run", "hosts": list(self.hosts), "phases": {}}
        total = {"changes": 0, "failed": 0, "unverified": 0}
        for p in phases:
            row = {}
            for h in self.hosts:
                c = self.cells.get((p, h))
                if c is None:
                    continue
                row[h] = c.as_dict()
                total["changes"] += len(c.changes)
                total["failed"] += c.failed + c.unreachable
                total["unverified"] += len(c.unverified)
            data["phases"][p] = row
        data["total"] = total
        data["tasks"] = self.tasks
        data["verified"] = total["failed"] == 0 and total["unverified"] == 0
        return data

    def table(self, data):
        check = data["mode"] == "check"
        head = ["phase"] + self.hosts
        rows = []
        for p in self._phases():
            row = [p]
            for h in self.hosts:
                c = self.cells.get((p, h))
                row.append("-" if c is None else c.text(check))
            rows.append(row)
        widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
        lines = ["  ".join(col.ljust(widths[i]) for i, col in enumerate(r)).rstrip() for r in [head] + rows]
        t = data["total"]
        if check:
            verdict = "%d change(s) predicted, nothing written" % t["changes"]
            assumed = ["%s (%s)" % (a, p) for p in self._phases() for h in self.hosts
                       for a in self.cells.get((p, h), Cell()).assumed]
            if assumed:
                verdict += "; assumed made by earlier tasks of the run: " + ", ".join(assumed)
        elif data["verified"]:
            verdict = "%d change(s) made, every one read back as promised" % t["changes"]
        else:
            verdict = "%d change(s) made; %d failed task(s), %d change(s) not verified" % (
                t["changes"], t["failed"], t["unverified"])
        return lines, verdict

    def v2_playbook_on_stats(self, stats):
        data = self.plan()
        lines, verdict = self.table(data)
        title = "GOPVE PLAN (%s)" % ("check mode: predicted" if data["mode"] == "check" else "changes made")
        self._display.banner(title)
        for line in lines:
            self._display.display(line)
        self._display.display(verdict)
        path = self.get_option("json_path")
        if path:
            path = os.path.expanduser(path)
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(data, f, indent=2, sort_keys=True)
                f.write("\n")
            os.rename(tmp, path)
