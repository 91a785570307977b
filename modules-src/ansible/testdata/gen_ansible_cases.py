# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Record what ansible-core's own AnsibleModule answers for argument cases.

The Go runtime must validate and coerce exactly like AnsibleModule, so its
table test compares against answers produced by the real thing, not by our
reading of it. Run with Debian's ansible-core (2.14.18 when generated):

    /usr/bin/python3 modules-src/ansible/testdata/gen_ansible_cases.py \
        > modules-src/ansible/testdata/ansible_cases.json

Each case runs AnsibleModule in a fresh interpreter (fail_json exits) with
the case's environment, and records the result: failed, msg, warnings and
invocation.module_args. Specs are written in JSON form so the Go test builds
the same spec from the same text.
"""
import json
import os
import subprocess
import sys

SPECS = {
    "types": {
        "argument_spec": {
            "name": {"type": "str", "required": True, "aliases": ["nm", "title"]},
            "count": {"type": "int"},
            "ratio": {"type": "float"},
            "flag": {"type": "bool", "default": False},
            "items": {"type": "list", "elements": "str"},
            "ports": {"type": "list", "elements": "int"},
            "labels": {"type": "dict"},
            "mode": {"type": "str", "choices": ["fast", "safe"]},
            "answer": {"type": "str", "choices": ["yes", "no", "maybe"]},
            "tags": {"type": "list", "elements": "str", "choices": ["a", "b", "c"]},
            "level": {"type": "int", "choices": [1, 2, 3]},
            "secret": {"type": "str", "no_log": True, "fallback_env": ["GOPVE_TEST_SECRET"]},
            "path": {"type": "path"},
            "raw": {"type": "raw"},
            "anything": {},
        },
    },
    "constraints": {
        "argument_spec": {
            "a": {"type": "str"},
            "b": {"type": "str"},
            "c": {"type": "str"},
            "d": {"type": "str"},
            "e": {"type": "str", "default": "dflt"},
            "state": {"type": "str", "choices": ["present", "absent", "latest"], "default": "present"},
            "enabled": {"type": "bool"},
        },
        "mutually_exclusive": [["a", "b"]],
        "required_together": [["c", "d"]],
        "required_one_of": [["a", "b", "e"]],
        "required_if": [["state", "absent", ["c"]], ["state", "latest", ["a", "b"], True], ["enabled", True, ["d"]]],
        "required_by": {"c": ["a"]},
    },
    "required": {
        "argument_spec": {
            "zeta": {"type": "str", "required": True},
            "alpha": {"type": "str", "required": True},
            "beta": {"type": "int"},
        },
    },
    "nested": {
        "argument_spec": {
            "name": {"type": "str"},
            "disks": {
                "type": "list", "elements": "dict",
                "options": {
                    "size": {"type": "int", "required": True},
                    "storage": {"type": "str", "default": "local-lvm"},
                    "kind": {"type": "str", "choices": ["ssd", "hdd"]},
                    "key": {"type": "str", "no_log": True},
                },
                "mutually_exclusive": [["kind", "storage"]],
            },
            "net": {
                "type": "dict",
                "options": {
                    "bridge": {"type": "str", "aliases": ["br"]},
                    "vlan": {"type": "int"},
                    "mtu": {"type": "int"},
                    "extra": {"type": "dict", "options": {"x": {"type": "bool", "required": True}}},
                },
                "required_together": [["vlan", "mtu"]],
            },
            "config": {
                "type": "dict", "apply_defaults": True,
                "options": {"retries": {"type": "int", "default": 3}, "token": {"type": "str", "no_log": True, "fallback_env": ["GOPVE_NESTED_TOKEN"]}},
            },
        },
    },
}

HOME = "/home/tester"
CASES = [
    # --- str
    ("types", "str plain", {"name": "web"}, {}),
    ("types", "str from int", {"name": 5}, {}),
    ("types", "str from float", {"name": 1.5}, {}),
    ("types", "str from big float", {"name": 1e16}, {}),
    ("types", "str from small float", {"name": 0.00001}, {}),
    ("types", "str from bool", {"name": True}, {}),
    ("types", "str from list", {"name": [1, "a", None, True]}, {}),
    ("types", "str from dict", {"name": {"k": "it's"}}, {}),
    ("types", "str null counts as given", {"name": None}, {}),
    ("types", "alias", {"nm": "web"}, {}),
    ("types", "alias and option both", {"name": "a", "title": "b"}, {}),
    # --- int
    ("types", "int from int", {"name": "x", "count": 5}, {}),
    ("types", "int from string (2.14 templating)", {"name": "x", "count": "5"}, {}),
    ("types", "int from signed padded string", {"name": "x", "count": " -42 "}, {}),
    ("types", "int from underscored string", {"name": "x", "count": "1_000"}, {}),
    ("types", "int from bad string", {"name": "x", "count": "five"}, {}),
    ("types", "int from float string", {"name": "x", "count": "5.0"}, {}),
    ("types", "int from fraction float", {"name": "x", "count": 5.5}, {}),
    ("types", "int from whole float (2.19 native templating)", {"name": "x", "count": 5.0}, {}),
    ("types", "int from list", {"name": "x", "count": [1]}, {}),
    # --- float
    ("types", "float from float", {"name": "x", "ratio": 0.25}, {}),
    ("types", "float from int", {"name": "x", "ratio": 2}, {}),
    ("types", "float from string", {"name": "x", "ratio": "1.5"}, {}),
    ("types", "float from exp string", {"name": "x", "ratio": "1e3"}, {}),
    ("types", "float from bad string", {"name": "x", "ratio": "half"}, {}),
    ("types", "float from dict", {"name": "x", "ratio": {}}, {}),
    # --- bool
    ("types", "bool yes", {"name": "x", "flag": "yes"}, {}),
    ("types", "bool YES", {"name": "x", "flag": "YES"}, {}),
    ("types", "bool on", {"name": "x", "flag": "On"}, {}),
    ("types", "bool off", {"name": "x", "flag": "off"}, {}),
    ("types", "bool y", {"name": "x", "flag": "y"}, {}),
    ("types", "bool n", {"name": "x", "flag": "N"}, {}),
    ("types", "bool t", {"name": "x", "flag": "t"}, {}),
    ("types", "bool f", {"name": "x", "flag": "F"}, {}),
    ("types", "bool true string", {"name": "x", "flag": "True"}, {}),
    ("types", "bool false string", {"name": "x", "flag": "false"}, {}),
    ("types", "bool 1 string", {"name": "x", "flag": "1"}, {}),
    ("types", "bool 0 string", {"name": "x", "flag": "0"}, {}),
    ("types", "bool 1 int", {"name": "x", "flag": 1}, {}),
    ("types", "bool 0 int", {"name": "x", "flag": 0}, {}),
    ("types", "bool 1.0 float", {"name": "x", "flag": 1.0}, {}),
    ("types", "bool 0.0 float", {"name": "x", "flag": 0.0}, {}),
    ("types", "bool native", {"name": "x", "flag": False}, {}),
    ("types", "bool padded", {"name": "x", "flag": " yes "}, {}),
    ("types", "bool bad string", {"name": "x", "flag": "maybe"}, {}),
    ("types", "bool 1.0 string is not a boolean", {"name": "x", "flag": "1.0"}, {}),
    ("types", "bool 2 int", {"name": "x", "flag": 2}, {}),
    ("types", "bool from list", {"name": "x", "flag": []}, {}),
    # --- list
    ("types", "list native", {"name": "x", "items": ["a", "b"]}, {}),
    ("types", "list from comma string", {"name": "x", "items": "a,b, c"}, {}),
    ("types", "list from plain string", {"name": "x", "items": "single"}, {}),
    ("types", "list from int", {"name": "x", "items": 5}, {}),
    ("types", "list from float", {"name": "x", "items": 2.5}, {}),
    ("types", "list elements str from ints", {"name": "x", "items": [1, 2.0, True]}, {}),
    ("types", "list from dict", {"name": "x", "items": {"a": 1}}, {}),
    ("types", "list elements int from strings", {"name": "x", "ports": ["22", 80, "443"]}, {}),
    ("types", "list elements int bad", {"name": "x", "ports": ["22", "ssh"]}, {}),
    ("types", "list elements int from comma string", {"name": "x", "ports": "22,80"}, {}),
    # --- dict
    ("types", "dict native", {"name": "x", "labels": {"a": 1, "b": "two"}}, {}),
    ("types", "dict from json string", {"name": "x", "labels": "{\"a\": 1, \"b\": [1, 2]}"}, {}),
    ("types", "dict from key=value", {"name": "x", "labels": "a=1, b=two"}, {}),
    ("types", "dict from quoted key=value", {"name": "x", "labels": "a='x y' b=\"c,d\" e=f\\ g"}, {}),
    ("types", "dict from value with equals", {"name": "x", "labels": "url=http://h/?q=1"}, {}),
    ("types", "dict from bad key=value", {"name": "x", "labels": "a=1, b"}, {}),
    ("types", "dict from plain string", {"name": "x", "labels": "nothing"}, {}),
    ("types", "dict from broken json", {"name": "x", "labels": "{nope"}, {}),
    ("types", "dict from int", {"name": "x", "labels": 5}, {}),
    ("types", "dict from list", {"name": "x", "labels": [1]}, {}),
    # --- path and raw
    ("types", "path tilde", {"name": "x", "path": "~/file"}, {"HOME": HOME}),
    ("types", "path tilde alone", {"name": "x", "path": "~"}, {"HOME": HOME}),
    ("types", "path env var", {"name": "x", "path": "$GOPVE_DIR/f-${GOPVE_DIR}"}, {"GOPVE_DIR": "/srv/data"}),
    ("types", "path unknown env var kept", {"name": "x", "path": "/a/$GOPVE_NOPE/b"}, {}),
    ("types", "path from int", {"name": "x", "path": 12}, {}),
    ("types", "raw keeps anything", {"name": "x", "raw": {"a": [1, "2", None]}}, {}),
    ("types", "untyped option is str", {"name": "x", "anything": 5}, {}),
    # --- choices
    ("types", "choice ok", {"name": "x", "mode": "fast"}, {}),
    ("types", "choice bad", {"name": "x", "mode": "presnt"}, {}),
    ("types", "choice null", {"name": "x", "mode": None}, {}),
    ("types", "choice bool True maps back to yes", {"name": "x", "answer": True}, {}),
    ("types", "choice bool False maps back to no", {"name": "x", "answer": False}, {}),
    ("types", "choice list ok", {"name": "x", "tags": ["a", "c"]}, {}),
    ("types", "choice list bad", {"name": "x", "tags": ["a", "x", "y"]}, {}),
    ("types", "choice list from string", {"name": "x", "tags": "a,b"}, {}),
    ("types", "choice int from string", {"name": "x", "level": "2"}, {}),
    ("types", "choice int bad", {"name": "x", "level": 7}, {}),
    # --- unsupported / required
    ("types", "unsupported one", {"name": "x", "foo": 1}, {}),
    ("types", "unsupported two", {"name": "x", "zzz": 1, "foo": 2}, {}),
    ("types", "missing required", {}, {}),
    ("required", "missing two required sorted", {"beta": 1}, {}),
    ("required", "missing required beats unsupported", {"beta": 1, "bogus": 2}, {}),
    ("required", "type error after required", {"alpha": "a", "zeta": "z", "beta": "x"}, {}),
    # --- no_log and fallback
    ("types", "secret given", {"name": "x is hunter2!", "secret": "hunter2"}, {}),
    ("types", "secret from env fallback", {"name": "the hunter2 value"}, {"GOPVE_TEST_SECRET": "hunter2"}),
    ("types", "secret given beats env", {"name": "x", "secret": "given1"}, {"GOPVE_TEST_SECRET": "fromenv"}),
    ("types", "secret in type error", {"name": "x", "secret": "s3cr3t", "count": "s3cr3t"}, {}),
    # --- constraints
    ("constraints", "mutually exclusive", {"a": "1", "b": "2"}, {}),
    ("constraints", "mutually exclusive beats unsupported", {"a": "1", "b": "2", "zz": 1}, {}),
    ("constraints", "required together", {"a": "1", "c": "x"}, {}),
    ("constraints", "required one of satisfied by default", {}, {}),
    ("constraints", "required if all", {"a": "1", "state": "absent"}, {}),
    ("constraints", "required if any", {"state": "latest", "e": None}, {}),
    ("constraints", "required if any satisfied", {"state": "latest", "a": "1"}, {}),
    ("constraints", "required if bool value", {"a": "1", "enabled": "yes"}, {}),
    ("constraints", "required by", {"c": "1", "d": "2", "b": "x"}, {}),
    ("constraints", "all fine", {"a": "1", "c": "x", "d": "y", "state": "absent"}, {}),
    ("constraints", "choice bad", {"a": "1", "state": "presnt"}, {}),
    # --- nested
    ("nested", "nested ok with defaults", {"disks": [{"size": "10"}, {"size": 5, "kind": "ssd"}]}, {}),
    ("nested", "nested null counts as given for mutually_exclusive", {"disks": [{"size": "10"}, {"size": 5, "kind": "ssd", "storage": None}]}, {}),
    ("nested", "nested missing required", {"disks": [{"storage": "x"}]}, {}),
    ("nested", "nested type error", {"disks": [{"size": "big"}]}, {}),
    ("nested", "nested choice", {"disks": [{"size": 1, "kind": "nvme"}]}, {}),
    ("nested", "nested unsupported", {"disks": [{"size": 1, "colour": "red"}]}, {}),
    ("nested", "nested mutually exclusive", {"disks": [{"size": 1, "kind": "ssd", "storage": "x"}]}, {}),
    ("nested", "nested element from key=value string", {"disks": ["size=4 kind=hdd"]}, {}),
    ("nested", "nested element not a dict", {"disks": [5]}, {}),
    ("nested", "nested dict alias", {"net": {"br": "vmbr0"}}, {}),
    ("nested", "nested dict alias both", {"net": {"br": "vmbr0", "bridge": "vmbr1"}}, {}),
    ("nested", "nested required together", {"net": {"vlan": 10}}, {}),
    ("nested", "nested twice", {"net": {"extra": {}}}, {}),
    ("nested", "nested twice type", {"net": {"extra": {"x": "perhaps"}}}, {}),
    ("nested", "nested dict from string", {"net": "bridge=vmbr0 vlan=5 mtu=1500"}, {}),
    ("nested", "nested no_log", {"disks": [{"size": 1, "key": "k3y-value"}], "name": "uses k3y-value"}, {}),
    ("nested", "nested env fallback secret", {"name": "tok-123 here"}, {"GOPVE_NESTED_TOKEN": "tok-123"}),
    ("nested", "apply defaults null", {"config": None}, {}),
]


RUNNER = r'''
import json, sys
from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule, env_fallback

case = json.loads(sys.stdin.read())
def to_py(spec):
    out = {}
    for name, o in spec.items():
        o = dict(o)
        if "fallback_env" in o:
            o["fallback"] = (env_fallback, o.pop("fallback_env"))
        if "options" in o:
            o["options"] = to_py(o["options"])
        out[name] = o
    return out
spec = dict(case["spec"])
argument_spec = to_py(spec.pop("argument_spec"))
kwargs = {}
for k, v in spec.items():
    kwargs[k] = v
args = dict(case["params"])
args.update({"_ansible_module_name": "gopve_test", "_ansible_no_log": True})
basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()
m = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True, **kwargs)
m.exit_json(changed=False)
'''


def run(spec_name, title, params, env):
    child_env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
    child_env.update(env)
    proc = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps({"spec": SPECS[spec_name], "params": params}),
                          capture_output=True, text=True, env=child_env)
    try:
        res = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit("case %r: no JSON from AnsibleModule: %s %s" % (title, proc.stdout, proc.stderr))
    return {
        "name": title, "spec": spec_name, "params": params, "env": env,
        "failed": bool(res.get("failed", False)),
        "msg": res.get("msg", ""),
        "warnings": res.get("warnings", []),
        "module_args": res.get("invocation", {}).get("module_args"),
    }


def main():
    import ansible
    out = {"generated_with": "ansible-core " + ansible.__version__, "specs": SPECS,
           "cases": [run(*c) for c in CASES]}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
