"""Validate and build the extension zips with Blender's own extension CLI (shipped in the bpy wheel).

The wheels the manifest names are fetched into wheels/ first (gitignored; pinned by their file
names: one per engine, Python and platform), each for the Python its file name says (cp311 for
Blender 4.2-5.0, cp313 for 5.1 on); ``--split-platforms`` then gives one zip per platform carrying
that platform's wheels for both Pythons.  Blender installs those of its own Python.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def blender_ext_cli() -> Path:
    """Path of blender_ext.py inside the installed bpy module."""
    import importlib.util

    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("build: the bpy module is not installed (run ./fatigue build, which installs it)")
    base = Path(list(spec.submodule_search_locations)[0])
    found = sorted(base.glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
    if not found:
        raise SystemExit(f"build: blender_ext.py not found under {base}")
    return found[-1]


def manifest_wheels(root: Path = ROOT) -> list[str]:
    text = (root / "blender_manifest.toml").read_text(encoding="utf-8")
    block = re.search(r"^wheels\s*=\s*\[(.*?)\]", text, re.S | re.M)
    return re.findall(r'"([^"]+\.whl)"', block.group(1)) if block else []


def wheel_target(filename: str) -> tuple[str, str, str | None, str | None]:
    """(distribution, version, pip platform, Python version) of a wheel's file name; the last two
    are None for a pure-Python wheel (``py3-none-any``), which pip fetches as it is."""
    parts = filename[:-len(".whl")].split("-")
    name, version, python_tag, platform_tag = parts[0], parts[1], parts[-3], parts[-1]
    if platform_tag == "any":
        return name, version, None, None
    if not (python_tag.startswith("cp3") and python_tag[3:].isdigit()):
        raise SystemExit(f"build: cannot tell the Python of {filename} (python tag {python_tag})")
    return name, version, platform_tag.split(".")[0], f"3.{python_tag[3:]}"


def fetch_wheels(root: Path = ROOT) -> None:
    """Download every wheel the manifest names that is not in wheels/ yet (pinned by file name)."""
    for rel in manifest_wheels(root):
        target = root / rel
        if target.exists():
            continue
        name, version, platform, python = wheel_target(target.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        where = ["--platform", platform, "--python-version", python] if platform else []
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--only-binary", ":all:", *where, "-d", str(target.parent), f"{name}=={version}"],
            check=True,
        )
        if not target.exists():
            raise SystemExit(f"build: pip did not produce {rel}")


def run_cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, str(blender_ext_cli()), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"build: blender_ext {args[0]} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def build(out_dir: Path, root: Path = ROOT) -> list[Path]:
    """Validate the manifest and build one zip per platform into ``out_dir``; returns the zips."""
    fetch_wheels(root)
    run_cli("validate", str(root))
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("fatigued_takes-*.zip"):
        old.unlink()
    run_cli("build", "--source-dir", str(root), "--output-dir", str(out_dir), "--split-platforms")
    return sorted(out_dir.glob("fatigued_takes-*.zip"))


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="./fatigue build", description=__doc__)
    ap.add_argument("--out", default=str(ROOT / "dist"), help="output folder (default dist/)")
    ap.add_argument("--cli", action="store_true", help="print the path of this bpy's blender_ext.py and stop")
    args = ap.parse_args(argv)
    if args.cli:
        print(blender_ext_cli())
        return 0
    for zip_path in build(Path(args.out)):
        print(f"built {zip_path} ({zip_path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
