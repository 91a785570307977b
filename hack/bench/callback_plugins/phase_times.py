# Benchmark-only callback (hack/bench-site.sh): wall time and task count per
# phase of a playbook run, written as JSON to $GOPVE_BENCH_PHASES. ansible-core
# ships no timing callback (profile_tasks and timer are ansible.posix's), so
# this one stays small: a phase is the first tag of a play that names one of
# $GOPVE_BENCH_PHASE_TAGS (gopve.proxmox.site's import_playbook tags reach
# its plays; the seed reconstruction tags its plays the same way), else the
# play's name. Plays of one phase add up.
#
# At -vvv, gopve.proxmox modules put their run's cost in the result
# (gopve_cost: processes started on the node, API requests sent, HTTPS
# connections opened; counted by the host and pveapi layers, issue 24 §3):
# each phase adds them up per module, with the number of task results.
import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: phase_times
type: aggregate
short_description: wall time and task count per phase (gopve.proxmox benchmarks)
description: Writes each phase's seconds and task count to the file named by GOPVE_BENCH_PHASES.
requirements: [enabled in callbacks_enabled]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "phase_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._known = os.environ.get("GOPVE_BENCH_PHASE_TAGS", "").split()
        self._phases = {}
        self._order = []
        self._current = None
        self._started = None

    def _close(self):
        if self._current is not None:
            self._phases[self._current]["seconds"] += time.monotonic() - self._started
        self._current = None

    def v2_playbook_on_play_start(self, play):
        self._close()
        tags = [t for t in (play.tags or []) if t in self._known]
        phase = tags[0] if tags else play.get_name()
        if phase not in self._phases:
            self._phases[phase] = {"seconds": 0.0, "tasks": 0, "cost": {}}
            self._order.append(phase)
        self._current, self._started = phase, time.monotonic()

    def v2_playbook_on_task_start(self, task, is_conditional):
        if self._current is not None:
            self._phases[self._current]["tasks"] += 1

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def _cost(self, result):
        if self._current is None:
            return
        res = result._result
        items = res.get("results") if isinstance(res.get("results"), list) else [res]
        for item in items:
            c = item.get("gopve_cost") if isinstance(item, dict) else None
            if not isinstance(c, dict):
                continue
            module = result._task.action.rsplit(".", 1)[-1]
            acc = self._phases[self._current]["cost"].setdefault(
                module, {"results": 0, "processes": 0, "api_requests": 0, "connections": 0})
            acc["results"] += 1
            for k in ("processes", "api_requests", "connections"):
                acc[k] += int(c.get(k, 0))

    def v2_runner_on_ok(self, result):
        self._cost(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._cost(result)

    def v2_playbook_on_stats(self, stats):
        self._close()
        path = os.environ.get("GOPVE_BENCH_PHASES")
        if path:
            with open(path, "w") as f:
                json.dump([dict(phase=p, **self._phases[p]) for p in self._order], f)
