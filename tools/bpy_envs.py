"""Environments holding other Blender versions' bpy module: the oldest supported (4.2 LTS, CPython
3.11) and the newest on the index (5.3, CPython 3.13), for the tests that install the built
extension into them (tests/install/test_extension_install.py).

Why separate environments: one Python holds one bpy, and 5.1 on needs Python 3.13.  Each is made
on first use under the repository (``.venv-bpy42``, ``.venv-bpy53``, gitignored) from its pinned
``requirements/bpy42.txt`` / ``bpy53.txt`` and stamped with that file's hash, so later runs only
read the stamp.  ``python tools/bpy_envs.py [4.2 5.3]`` makes them ahead of a test run.
"""
from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Unavailable(Exception):
    """No Python of the version an environment needs was found (the reason names the fix)."""


@dataclass(frozen=True)
class Env:
    blender: str          # "4.2"
    python: str           # "3.11": the CPython that Blender version embeds
    name: str             # "bpy42": requirements/<name>.txt, .venv-<name>

    @property
    def requirements(self) -> Path:
        return ROOT / "requirements" / f"{self.name}.txt"

    @property
    def folder(self) -> Path:
        return ROOT / f".venv-{self.name}"

    @property
    def interpreter(self) -> Path:
        return self.folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

    def stamp(self) -> Path:
        digest = hashlib.sha256(self.requirements.read_bytes()).hexdigest()[:16]
        return self.folder / f".installed-{digest}"


ENVS = {"4.2": Env("4.2", "3.11", "bpy42"), "5.3": Env("5.3", "3.13", "bpy53")}


def _runs_as(candidate: str, version: str) -> bool:
    """Whether ``candidate`` starts and is CPython ``version`` with venv (a pyenv shim for another
    version fails here, and is skipped)."""
    try:
        res = subprocess.run([candidate, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0 and res.stdout.strip() == version


def find_python(version: str) -> str | None:
    """A CPython ``version`` ("3.13") executable: ``$FATIGUE_PYTHON313``, then ``python3.13`` on
    PATH, then pyenv's installs (``$PYENV_ROOT`` or ~/.pyenv, newest patch first), then the usual
    system folders.  None when there is none."""
    short = version.replace(".", "")
    candidates = [os.environ.get(f"FATIGUE_PYTHON{short}", "")]
    if version == "3.11":
        candidates.append(os.environ.get("FATIGUE_PYTHON", ""))      # ./fatigue's own setting
    candidates.append(shutil.which(f"python{version}") or "")
    for root in (os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv")):
        if root:
            found = glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}"))
            candidates += sorted(found, key=lambda p: [int(x) if x.isdigit() else -1
                                                       for x in Path(p).parents[1].name.split(".")], reverse=True)
    candidates += [f"{d}/python{version}" for d in ("/usr/local/bin", "/usr/bin", "/opt/homebrew/bin")]
    seen = set()
    for c in candidates:
        if c and c not in seen and os.path.exists(c) and _runs_as(c, version):
            return c
        seen.add(c)
    return None


def ensure(blender: str, log=None) -> Path:
    """The Python of the environment for Blender ``blender`` ("4.2", "5.3"), made and installed
    the first time (and again when its requirements file changes).  Unavailable when no Python
    of the right version exists here; RuntimeError when the install fails."""
    env = ENVS[blender]
    if env.interpreter.exists() and env.stamp().exists():
        return env.interpreter
    python = find_python(env.python)
    if python is None:
        raise Unavailable(f"no CPython {env.python} found for bpy {blender} (set FATIGUE_PYTHON{env.python.replace('.', '')}, "
                          f"or put python{env.python} on PATH)")
    say = log or (lambda text: print(text, file=sys.stderr, flush=True))
    if not env.interpreter.exists():
        subprocess.run([python, "-m", "venv", str(env.folder)], check=True)
    for old in env.folder.glob(".installed-*"):
        old.unlink()
    say(f"fatigue: installing {env.requirements.relative_to(ROOT)} into {env.folder.name} (once; bpy is a "
        f"~400 MB download)")
    res = subprocess.run([str(env.interpreter), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                          "-r", str(env.requirements)], capture_output=True, text=True)
    if res.returncode != 0:
        tail = "\n".join((res.stdout + res.stderr).strip().splitlines()[-5:])
        raise RuntimeError(f"installing {env.requirements.name} into {env.folder.name} failed:\n{tail}")
    env.stamp().touch()
    return env.interpreter


def main(argv: list[str]) -> int:
    code = 0
    for blender in argv or list(ENVS):
        try:
            print(f"bpy {blender}: {ensure(blender)}")
        except Unavailable as exc:
            print(f"bpy {blender}: not available: {exc}")
        except RuntimeError as exc:
            print(f"bpy {blender}: {exc}", file=sys.stderr)
            code = 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
