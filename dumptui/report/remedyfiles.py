"""The remedy of the culprits (core/search/remedy.py decides each remedy): its files (ATC's keep_dtype.cfg and
op_precision.ini, the MindSpore Lite converter's config, a MindSpore snippet and REMEDY.txt saying which does
what) and the `remedy` section of bisect/compare --json. No rich here: the app's presenter writes them too."""

from __future__ import annotations

import math
import os

from dumptui.core.io.safeio import write_text
from dumptui.core.search.remedy import Remedy
from dumptui.core.search.replay.precision import RemedyCause
from dumptui.report.reasons import remedy_sentence, say, variant_words


def keep_dtype_file(remedies: list[Remedy]) -> str:
    """ATC's --keep_dtype file: one op name per line (the ops whose cause is precision)."""
    names = list(dict.fromkeys(r.target_name for r in remedies if r.cause == RemedyCause.PRECISION))
    return "".join(f"{n}\n" for n in names)


def op_precision_file(remedies: list[Remedy]) -> str:
    """ATC's --op_precision_mode file: these ops (by node name) computed at high precision, the rest as built."""
    names = list(dict.fromkeys(r.target_name for r in remedies if r.cause == RemedyCause.PRECISION))
    if not names:
        return ""
    return "[ByNodeName]\n" + "".join(f"{n}=high_precision\n" for n in names)


def lite_config(remedies: list[Remedy]) -> str:
    """The MindSpore Lite converter's config (--configFile): [ascend_context] precision_mode, for the model."""
    if not any(r.cause == RemedyCause.PRECISION for r in remedies):
        return ""
    return "[ascend_context]\nprecision_mode=preferred_fp32\n"


def mindspore_snippet(remedies: list[Remedy]) -> str:
    """MindSpore: the cells holding the ops to keep in float32, `to_float(mstype.float32)` each."""
    cells = list(dict.fromkeys(r.cell for r in remedies if r.cause == RemedyCause.PRECISION))
    if not cells:
        return ""
    lines = ["import mindspore as ms", "from mindspore import dtype as mstype", ""]
    lines.append("# `net` is the network as built for export; each line keeps one cell's ops in float32")
    for c in cells:
        lines.append(f"net{'.' + c if c else ''}.to_float(mstype.float32)")
    return "\n".join(lines) + "\n"


def remedy_files(remedies: list[Remedy]) -> dict[str, str]:
    """File name -> text, for the files that have something to say."""
    files = {
        "keep_dtype.cfg": keep_dtype_file(remedies),
        "op_precision.ini": op_precision_file(remedies),
        "converter_ascend.cfg": lite_config(remedies),
        "to_float32.py": mindspore_snippet(remedies),
    }
    files["REMEDY.txt"] = summary(remedies)
    return {k: v for k, v in files.items() if v}


def summary(remedies: list[Remedy]) -> str:
    if not remedies:
        return "No culprit: nothing to remedy.\n"
    lines = []
    for r in remedies:
        lines.append(f"{r.target_name} ({r.target_type}): {remedy_sentence(r)}")
    if any(r.cause == RemedyCause.PRECISION for r in remedies):
        lines += [
            "",
            "Per op first (the rest of the model keeps its speed):",
            "keep_dtype.cfg: atc ... --keep_dtype=keep_dtype.cfg (one op per line; `OpType::<type>` keeps every op "
            "of a type; not applied under --precision_mode=must_keep_origin_dtype, which keeps all anyway)",
            "op_precision.ini: atc ... --op_precision_mode=op_precision.ini (these ops at high precision)",
            "The whole model, if per op is not enough:",
            "converter_ascend.cfg: converter_lite ... --configFile=converter_ascend.cfg: precision_mode="
            "preferred_fp32 changes the WHOLE model to float32 wherever an op supports it (slower everywhere)",
            "to_float32.py: MindSpore, before export: the cells holding these ops kept in float32",
        ]
    lines += ["", "Re-dump the target with the remedy and compare again: the culprit should be gone."]
    return "\n".join(lines) + "\n"


def write_files(folder: str, found: list[Remedy]) -> list[str]:
    """Write the remedy files into `folder` (created); returns the paths written."""
    return write_named(folder, remedy_files(found))


def write_named(folder: str, files: dict[str, str]) -> list[str]:
    """Files (name -> text) written into `folder` (created); the paths written."""
    os.makedirs(folder, exist_ok=True)
    written = []
    for fname, text in files.items():
        path = os.path.join(folder, fname)
        write_text(path, text)
        written.append(path)
    return written


def _num(v: float) -> float | None:
    return v if isinstance(v, float) and math.isfinite(v) else None


def remedy_section(found: list[Remedy]) -> dict:
    """The `remedy` section of bisect/compare --json: each culprit's cause and the files' texts."""
    return {
        "culprits": [
            {
                "ref": r.ref_name,
                "target": r.target_name,
                "cause": r.cause,
                "sentence": remedy_sentence(r),
                "device_dtype": r.finding.dtype or None,
                "variant": variant_words(r.finding) or None,
                "how": r.finding.how or None,
                "target_vs_device_replay": _num(r.finding.dev_device),
                "target_vs_exact": _num(r.finding.dev_exact),
                "device_replay_vs_exact": _num(r.finding.dev_replay),
                "floor": _num(r.finding.floor),
                "cell": r.cell,
                "change": say(r.change) if r.change is not None else "",
            }
            for r in found
        ],
        "files": remedy_files(found),
    }
