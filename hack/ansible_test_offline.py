# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-test, with its sanity virtual environments made from Debian's packages.

Run by hack/sanity.sh as: /usr/bin/python3 hack/ansible_test_offline.py sanity ...

ansible-test sanity runs several checks (validate-modules, ansible-doc,
yamllint, import, runtime-metadata, pep8, pylint) in virtual environments
of their own, into which it pip-installs pinned requirements
(ansible_test/_data/requirements/sanity.*.txt) from PyPI, after fetching
pip's bootstrap script from ci-files.testing.ansible.com. Offline, both
downloads fail and so does the whole run.

This wrapper changes only how those environments are filled: each is
created without pip, and every distribution its requirements name is
linked into its site-packages from Debian's own packages
(/usr/lib/python3/dist-packages, the ones `make deps` installs). So a check
sees what it asked for and nothing else, at Debian's version of it (which
may differ from the pin: Debian 12 has voluptuous 0.12.2 where
ansible-test 2.14 pins 0.13.1). A check whose requirements Debian does not
provide here (pep8: pycodestyle; pylint) gets no environment, and
ansible-test skips it, saying "missing virtual environment support".

The environments live under $HOME/.ansible/test/venv: hack/sanity.sh points
HOME at its temporary directory, so these never mix with environments a
networked ansible-test run would build.

It patches ansible-test's internals (ansible-core 2.14, Debian 12) and
fails loudly when they are not what it expects.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import sys

DEBIAN_SITE = '/usr/lib/python3/dist-packages'


def _internal(name):
    return importlib.import_module('ansible_test._internal' + name)


def _normalize(name):
    return re.sub(r'[-_.]+', '-', name).lower()


def _requirement_names(commands, pip_install):
    """The distribution names the pip install commands ask for."""
    names = []
    for command in commands:
        if not isinstance(command, pip_install):
            continue
        lines = [line for _path, text in command.requirements for line in text.splitlines()]
        for line in lines + list(command.packages):
            line = line.split('#', 1)[0].strip()
            if line:
                names.append(re.split(r'[<>=!~;\[ ]', line, maxsplit=1)[0])
    return names


def _debian_files(name, top_levels):
    """Paths in DEBIAN_SITE that make up distribution name, or None."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    meta = os.path.realpath(str(dist._path))  # pylint: disable=protected-access
    if os.path.dirname(meta) != DEBIAN_SITE:
        return None  # not Debian's (pip-installed under /usr/local, say)
    tops = sorted(top for top, dists in top_levels.items() if _normalize(name) in {_normalize(d) for d in dists})
    paths = [meta]
    for entry in sorted(os.listdir(DEBIAN_SITE)):
        if any(entry == top or entry.startswith(top + '.') for top in tops):
            paths.append(os.path.join(DEBIAN_SITE, entry))
    return paths if len(paths) > 1 else None


def _site_packages(venv_python):
    venv = os.path.dirname(os.path.dirname(venv_python))
    libs = [d for d in os.listdir(os.path.join(venv, 'lib')) if d.startswith('python')]
    if len(libs) != 1:
        raise RuntimeError('cannot find the site-packages of %s' % venv)
    return os.path.join(venv, 'lib', libs[0], 'site-packages')


def main():
    sanity = _internal('.commands.sanity')
    python_requirements = _internal('.python_requirements')
    for owner, attr in ((sanity, 'create_sanity_virtualenv'), (sanity, 'create_virtual_environment'),
                        (sanity, 'run_pip'), (sanity, 'collect_requirements'), (python_requirements, 'PipInstall')):
        if not hasattr(owner, attr):
            sys.exit('ansible_test_offline: this ansible-test has no %s.%s; the wrapper needs updating' % (owner.__name__, attr))
    display = _internal('.util').display
    pip_install = python_requirements.PipInstall
    original_create = sanity.create_sanity_virtualenv
    original_venv = sanity.create_virtual_environment
    top_levels = importlib.metadata.packages_distributions()

    def create_virtual_environment(args, python, path, system_site_packages=False, pip=False):
        return original_venv(args, python, path, system_site_packages=False, pip=False)

    def link_requirements(_args, python, commands, _connection):
        site = _site_packages(python.path)
        for name in _requirement_names(commands, pip_install):
            for path in _debian_files(name, top_levels) or []:
                target = os.path.join(site, os.path.basename(path))
                if not os.path.lexists(target):
                    os.symlink(path, target)

    def create_sanity_virtualenv(args, python, name, coverage=False, minimize=False):
        commands = sanity.collect_requirements(python=python, controller=True, virtualenv=False, command=None, ansible=False,
                                               cryptography=False, coverage=coverage, minimize=minimize, sanity=name)
        missing = [n for n in _requirement_names(commands, pip_install) if _debian_files(n, top_levels) is None]
        if missing:
            display.warning('sanity environment %s: Debian provides no %s here; the test is skipped' % (name, ', '.join(missing)))
            return None
        return original_create(args, python, name, coverage=coverage, minimize=minimize)

    sanity.create_virtual_environment = create_virtual_environment
    sanity.run_pip = link_requirements
    sanity.create_sanity_virtualenv = create_sanity_virtualenv
    # The sanity tests import create_sanity_virtualenv by name: those
    # loaded later bind the patched one, those loaded already are patched.
    for module in list(sys.modules.values()):
        if getattr(module, '__name__', '').startswith('ansible_test._internal') and \
                getattr(module, 'create_sanity_virtualenv', None) is original_create:
            module.create_sanity_virtualenv = create_sanity_virtualenv

    _internal('').main(sys.argv)


if __name__ == '__main__':
    main()
