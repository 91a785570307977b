# WANT_JSON
# Test stub standing in for a gopve module: returns the task arguments it got
# (without Ansible's internal _ansible_* keys) and changes nothing.
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        args = json.load(f)
    params = {k: v for k, v in args.items() if not k.startswith('_ansible_')}
    print(json.dumps({'changed': False, 'args': params,
                      'reboot_required': False, 'reboot_reasons': []}))


if __name__ == '__main__':
    main()
