"""msprobe dumps written for tests: dump.json (task `statistics`, so no tensor files) and construct.json, laid out
as msprobe 26.x writes them at level `mix` for PyTorch (`Module.…`, `torch.float32`) or MindSpore (`Cell.…`,
`Float32`). A tensor is named by one number, its statistics made from it, so equal numbers are one tensor
(dumptui infers the dataflow from equal statistics)."""

from __future__ import annotations

import json

# (API call, the module path it runs in or "" for none, input values, output values)
Call = tuple[str, str, list[float], list[float]]

_TENSOR = {"pytorch": ("torch.Tensor", "torch.float32"), "mindspore": ("mindspore.Tensor", "Float32")}


def record(v: float, framework: str = "pytorch") -> dict:
    kind, dtype = _TENSOR[framework]
    return {"type": kind, "dtype": dtype, "shape": [4], "Max": v, "Min": -v, "Mean": v / 10, "Norm": 2 * v}


def write_dump(
    root, prefix: str, modules: dict[str, str], calls: list[Call], framework: str = "pytorch", rank: int = 0
) -> str:
    """An msprobe dump under root/step0/rank{rank}. `modules`: {module path: class}, each called once as
    `{prefix}.{path}.{class}.forward.0` under the longest listed path above it. `calls` in execution order; a
    backward call runs in its module's backward call."""
    d = root / "step0" / f"rank{rank}"
    d.mkdir(parents=True)

    def module_call(path: str, direction: str = "forward") -> str:
        return f"{prefix}.{path}.{modules[path]}.{direction}.0" if path else ""

    construct, data = {}, {}
    for name, path, ins, outs in calls:
        construct[name] = module_call(path, name.rsplit(".", 1)[1]) or None  # null: no parent, as msprobe writes it
        data[name] = {
            "input_args": [record(v, framework) for v in ins],
            "input_kwargs": {},
            "output": [record(v, framework) for v in outs],
        }
    for path in modules:
        above = [p for p in modules if path.startswith(p + ".")]
        construct[module_call(path)] = module_call(max(above, key=len)) if above else None
        data[module_call(path)] = {"input_args": [], "input_kwargs": {}, "output": []}
    doc = {"task": "statistics", "level": "mix", "framework": framework, "dump_data_dir": None, "data": data}
    (d / "dump.json").write_text(json.dumps(doc))
    (d / "construct.json").write_text(json.dumps(construct))
    return str(root)
