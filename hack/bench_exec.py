"""One module process, side by side: the Go runtime vs Python's AnsibleModule.

Both get the same args file (2.14 shape, strings to coerce) and do the same
work: validate the spec, converge a small file (already converged after the
first run), print one JSON result. Wall time is the median of the runs; peak
RSS is the largest ru_maxrss seen for each variant. Printed as ratios.
"""
import json, os, resource, statistics, subprocess, sys, time

ROUNDS = int(os.environ.get("BENCH_EXEC_ROUNDS", "30"))

PY_MODULE = r'''
import os
from ansible.module_utils.basic import AnsibleModule
spec = dict(
    name=dict(type="str", required=True, aliases=["title"]), count=dict(type="int"),
    ratio=dict(type="float"), flag=dict(type="bool", default=False),
    items=dict(type="list", elements="str"), labels=dict(type="dict"),
    mode=dict(type="str", choices=["fast", "safe"]), secret=dict(type="str", no_log=True),
    path=dict(type="path"), content=dict(type="str", default=""),
    state=dict(type="str", default="present", choices=["present", "absent"]),
)
m = AnsibleModule(argument_spec=spec, supports_check_mode=True)
p, changed = m.params["path"], False
cur = open(p).read() if os.path.exists(p) else None
if cur != m.params["content"]:
    changed = True
    with open(p + ".tmp", "w") as f: f.write(m.params["content"])
    os.replace(p + ".tmp", p)
m.exit_json(changed=changed)
'''

def measure(cmd, env):
    times = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        out = subprocess.run(cmd, env=env, capture_output=True, check=True).stdout
        times.append(time.perf_counter() - t0)
        result = json.loads(out)  # exactly one JSON object, or this raises
        assert result.get("changed") is False and not result.get("failed"), result
    return statistics.median(times) * 1000

def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    args = {"name": "bench", "count": "5", "ratio": "0.5", "flag": "yes", "items": "a,b,c",
            "labels": "k=v, x=y", "mode": "safe", "secret": "s3cret",
            "content": "x\n", "_ansible_check_mode": False, "_ansible_diff": False,
            "_ansible_version": "2.14.18", "_ansible_module_name": "bench"}
    go_args, py_args = dict(args, path=f"{work}/go.txt", _gopve_module="gopve_test"), dict(args, path=f"{work}/py.txt")
    for name, a in (("go.json", go_args), ("py.json", py_args)):
        with open(f"{work}/{name}", "w") as f: json.dump(a, f)
    py = f"{work}/mod.py"
    with open(py, "w") as f: f.write(PY_MODULE)
    # AnsibleModule reads its arguments from basic._ANSIBLE_ARGS when set (that
    # is how AnsiballZ hands them over), wrapped in ANSIBLE_MODULE_ARGS.
    runner = f"{work}/run.py"
    with open(runner, "w") as f:
        f.write("import json,sys\nfrom ansible.module_utils import basic\n"
                "basic._ANSIBLE_ARGS = json.dumps({'ANSIBLE_MODULE_ARGS': json.load(open(sys.argv[1]))}).encode()\n"
                f"exec(open({py!r}).read())\n")
    env = dict(os.environ, LANG="C.UTF-8")
    # One untimed run each so both files are converged: the timed runs are "ok" runs.
    subprocess.run([binary, f"{work}/go.json"], env=env, capture_output=True, check=True)
    subprocess.run(["/usr/bin/python3", runner, f"{work}/py.json"], env=env, capture_output=True, check=True)
    go, py = [binary, f"{work}/go.json"], ["/usr/bin/python3", runner, f"{work}/py.json"]
    go_ms, py_ms = measure(go, env), measure(py, env)
    go_rss, py_rss = child_peak(go, env), child_peak(py, env)
    print(f"one module process ({ROUNDS} runs, median wall time; peak RSS)")
    print(f"  {'Go runtime (gopve_test)':34s} {go_ms:8.1f} ms {go_rss/1024:8.1f} MiB")
    print(f"  {'Python AnsibleModule, same spec':34s} {py_ms:8.1f} ms {py_rss/1024:8.1f} MiB")
    print(f"  ratio Go / Python time              {go_ms/py_ms:6.2f}")
    print(f"  ratio Go / Python peak RSS          {go_rss/py_rss:6.2f}")

def child_peak(cmd, env):
    # ru_maxrss of RUSAGE_CHILDREN is a maximum over all children ever waited
    # for, so measure each variant's peak in a fresh helper process.
    code = ("import resource,subprocess,sys\n"
            "subprocess.run(sys.argv[1:],capture_output=True,check=True)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    return int(subprocess.run(["/usr/bin/python3", "-c", code] + cmd, env=env,
                              capture_output=True, check=True, text=True).stdout)

if __name__ == "__main__":
    main()
