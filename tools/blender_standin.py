"""A stand-in for the ``blender`` command where no Blender binary exists: Blender's command line
over the bpy module of this Python (the tests and tools/bench_farm.py run the farm job with it).

    python tools/blender_standin.py -b [FILE.blend] [--factory-startup] [--python-exit-code N]
                                    (--python SCRIPT | --python-expr EXPR)... [-- ARGS...]

As Blender does: ``sys.argv`` is the whole command line (a script reads its own arguments after
``--``), FILE is opened first, each script runs as ``__main__`` in order, an exception in one is
printed and ends the run with ``--python-exit-code`` (0 by default), ``sys.exit`` in a script ends
it with that code.  Anything else is refused with one line.  A ``blender`` wrapper for it:
``printf '#!/bin/sh\\nexec %s %s "$@"\\n' .venv/bin/python tools/blender_standin.py > blender``.
"""
from __future__ import annotations

import os
import runpy
import shutil
import sys
import traceback
from pathlib import Path


def blender_command(folder: Path) -> str:
    """The Blender executable for a farm job run here: a real ``blender`` where one is on the PATH,
    else a ``blender`` wrapper written into ``folder`` that runs this stand-in with this Python."""
    real = shutil.which("blender")
    if real:
        return real
    wrapper = Path(folder) / "blender"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def _leave(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)       # no interpreter teardown: some bpy modules crash or hang in it


def main(argv: list[str]) -> int:
    args, rest = (argv[:argv.index("--")], argv[argv.index("--"):]) if "--" in argv else (argv, [])
    blend, scripts, error_code = None, [], 0
    it = iter(args)
    for a in it:
        if a in ("-b", "--background", "--factory-startup", "-noaudio"):
            continue
        if a in ("--python", "-P", "--python-expr", "--python-exit-code"):
            value = next(it, None)
            if value is None:
                print(f"blender (stand-in): {a} needs a value", file=sys.stderr)
                return 2
            if a == "--python-exit-code":
                error_code = int(value)
            else:
                scripts.append(("expr" if a == "--python-expr" else "file", value))
        elif a.lower().endswith(".blend") and blend is None and not scripts:
            blend = a
        else:
            print(f"blender (stand-in): unsupported argument {a!r} (it runs -b [FILE] --python/--python-expr "
                  f"SCRIPT -- ARGS)", file=sys.stderr)
            return 2
    sys.argv = ["blender"] + args + rest
    import bpy

    if blend is not None:
        bpy.ops.wm.open_mainfile(filepath=blend)
    for kind, what in scripts:
        try:
            if kind == "file":
                runpy.run_path(what, run_name="__main__")
            else:
                exec(compile(what, "<string>", "exec"), {"__name__": "__main__"})
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:          # noqa: BLE001 -- Blender prints it and goes on (or exits with the code)
            traceback.print_exc()
            if error_code:
                return error_code
    return 0


if __name__ == "__main__":
    _leave(main(sys.argv[1:]))
