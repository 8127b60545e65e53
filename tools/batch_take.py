"""One take of ./fatigue bake, in its own process (``batch.py --take SPEC.json``, or a farm task):
open the file, bake with the operator an animator presses, save to the temporary file the batch
moves into place, and write the result beside it.  bpy is imported here only."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from runtime.request import BAKE_OPTIONS


def log_prefix(spec: dict) -> str:
    """The name a take's log files start with: its output file's stem and variant."""
    out = Path(spec["out_file"])
    return out.stem + (f".{spec['variant']}" if spec.get("variant") else "")


def _armature(bpy, name: str | None):
    """The armature to bake: the named one, else the active object, else the file's only armature."""
    if name:
        return name
    active = bpy.context.view_layer.objects.active if bpy.context.view_layer else None
    if active is not None and active.type == "ARMATURE":
        return active.name
    arms = sorted(o.name for o in bpy.data.objects if o.type == "ARMATURE")
    if len(arms) == 1:
        return arms[0]
    if not arms:
        raise ValueError("no armature in this file: bake a file with an animated character")
    raise ValueError(f"{len(arms)} armatures in this file ({', '.join(arms[:6])}): choose one with --armature")


def bake_one(spec: dict) -> dict:
    """Open ``spec['read_from']``, bake one take with the operator, save ``spec['out_file']``."""
    import bpy
    import demo_blend

    demo_blend.load_addon()
    failure = demo_blend.addon_module("fatigue_addon.failure")      # the operator's: its logs go beside the output
    failure.set_log_dir(Path(spec["out_file"]).parent, log_prefix(spec) + ".error")
    out = Path(spec["out_file"])
    result = {"status": "failed", "error": None}
    try:
        bpy.ops.wm.open_mainfile(filepath=spec["read_from"], load_ui=False)
    except RuntimeError as exc:
        result["error"] = f"cannot open {spec['read_from']}: {str(exc).strip().splitlines()[-1]}"
        return result
    try:
        armature = _armature(bpy, spec.get("armature"))
    except ValueError as exc:
        result["error"] = str(exc)
        return result
    result["armature"] = armature
    kwargs = {o.name: spec[o.name] for o in BAKE_OPTIONS if spec.get(o.name) is not None}
    obj = bpy.data.objects.get(armature)    # a name that is no armature here: the operator says so, listing them
    if spec.get("variant") and obj is not None and obj.type == "ARMATURE":
        source = kwargs.get("action")
        if source is None:
            found = demo_blend.addon_module("fatigue_addon.bake").source_action(obj, obj.fatigue_settings)
            source = found.name if found is not None else None
        if source is not None:
            kwargs["take_name"] = f"{source}.fatigued.{spec['variant']}"
    before = failure.last_log()
    try:
        bpy.ops.fatigue.bake_take(armature=armature, **kwargs)
    except RuntimeError as exc:
        text = str(exc).strip()
        if "Traceback" in text:        # a Python error that escaped the operator: its report goes to a file
            log = failure.write_log(text)
            last = failure.one_line(text.splitlines()[-1], 160)
            result["error"] = (f"the bake failed unexpectedly ({last}); nothing was written"
                               + (f"; full report in {log}" if log else ""))
        else:
            message = text.splitlines()[0] if text else "the bake failed"
            result["error"] = message[len("Error: "):] if message.startswith("Error: ") else message
        if failure.last_log() != before:
            result["log"] = str(failure.last_log())
        return result
    report = json.loads(obj.fatigue_settings.last_report)
    action = bpy.data.actions[report["action"]]
    action.use_fake_user = True            # every variant survives saving, assigned or not
    out.parent.mkdir(parents=True, exist_ok=True)
    part = Path(spec["part"])          # the batch moves it into place once every take of the file is done
    try:
        bpy.ops.wm.save_as_mainfile(filepath=str(part), copy=True, compress=False)
    except (RuntimeError, OSError) as exc:
        part.unlink(missing_ok=True)
        result["error"] = f"cannot write {out}: {exc}"
        return result
    result.update(
        status="ok", action=report["source"], out_action=report["action"], frames=report["source_frames"],
        take_frames=report["take_frames"], mode=report["mode"], engine=report.get("engine"), support=report.get("support"),
        seconds_sim=report["seconds_sim"],
        realtime_x=report["realtime_x"], duration_stretch=report["duration_stretch"],
        peak_fatigue_by_region=report["peak_fatigue_by_region"],
        residual_force_bw_mean=report["residual_force_bw_mean"], fell=report["fell"],
        fall_frame=report.get("fall_frame"), finished=report["finished"], behind_source_m=report.get("behind_source_m"),
        rests=report["rests"], kneels=report.get("kneels", 0),
        warnings=list(dict.fromkeys(report.get("warnings", []) + report.get("name_notes", []))) or None)
    return result


def _end_with_the_batch(part: Path) -> None:
    """A take whose batch was killed outright (SIGKILL: no chance to stop its takes) stops too and
    removes its temporary file: nothing is left to move it into place."""
    batch_pid = os.getppid()

    def watch():
        while os.getppid() == batch_pid:
            time.sleep(0.5)
        for p in (part, Path(f"{part}@")):
            p.unlink(missing_ok=True)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def take_main(spec_path: Path) -> int:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    _end_with_the_batch(Path(spec["part"]))
    try:
        result = bake_one(spec)
    except Exception as exc:     # noqa: BLE001 -- reported as this take's failure, the batch goes on
        import demo_blend

        failure = sys.modules.get(f"{demo_blend.PACKAGE}.fatigue_addon.failure")   # the add-on's, once loaded
        if failure is None:
            from fatigue_addon import failure
        failure.set_log_dir(Path(spec["out_file"]).parent, log_prefix(spec) + ".error")
        result = {"status": "failed", "error": failure.unexpected(exc, "the take", context=json.dumps(spec)),
                  "log": str(failure.last_log()) if failure.last_log() else None}
    Path(spec["result"]).write_text(json.dumps(result, default=float), encoding="utf-8")
    return 0
