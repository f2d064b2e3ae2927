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


TARGET_MODULES = {
    "module": "Float16Module",
    "module.module": "GPTModel",
    "module.module.language_model": "TransformerLanguageModel",
    "module.module.language_model.embedding": "Embedding",
    "module.module.language_model.rotary_pos_emb": "RotaryEmbedding",
    "module.module.language_model.encoder": "ParallelTransformer",
    "module.module.language_model.encoder.layers.0": "ParallelTransformerLayer",
    "module.module.language_model.encoder.layers.0.mlp": "ParallelMLP",
    "module.module.language_model.encoder.layers.0.mlp.dense_h_to_4h": "ColumnParallelLinear",
    "module.module.language_model.encoder.layers.0.mlp.dense_4h_to_h": "RowParallelLinear",
}


REF_MODULES = {
    "model": "FloatModule",
    "model.module": "GPT2Model",
    "model.module.embedding": "LanguageModelEmbedding",
    "model.module.decoder": "TransformerBlock",
    "model.module.decoder.layers.0": "TransformerLayer",
    "model.module.decoder.layers.0.mlp": "MLP",
    "model.module.decoder.layers.0.mlp.linear_fc1": "TELayerNormColumnParallelLinear",
    "model.module.decoder.layers.0.mlp.linear_fc2": "TERowParallelLinear",
}


DOC_YAML = """\
TopLayer:
  module: model
GPTModel:
  language_model.embedding: embedding
  language_model.rotary_pos_emb: rotary_pos_emb
  language_model.encoder: decoder
ParallelMLP:
  dense_h_to_4h: linear_fc1
  dense_4h_to_h: linear_fc2
"""


def write_megatron_pair(tmp_path, planted: float = 1.5) -> tuple[str, str]:
    """embedding -> mlp (linear, gelu, linear) -> residual add. The NPU computes its rotary embedding with one
    more linear before the MLP, so its MLP linears are linear.1 and linear.2 where the bench's are linear.0 and
    linear.1; the NPU's second MLP linear (dense_4h_to_h) is `planted` times off."""
    npu, gpu = "module.module.language_model", "model.module"
    npu_layer, gpu_layer = f"{npu}.encoder.layers.0", f"{gpu}.decoder.layers.0"
    ref = [
        ("Functional.embedding.0.forward", f"{gpu}.embedding", [1.0], [2.0]),
        ("Functional.linear.0.forward", f"{gpu_layer}.mlp.linear_fc1", [2.0, 0.5], [3.0]),
        ("Functional.gelu.0.forward", f"{gpu_layer}.mlp", [3.0], [4.0]),
        ("Functional.linear.1.forward", f"{gpu_layer}.mlp.linear_fc2", [4.0, 0.25], [5.0]),
        ("Torch.add.0.forward", gpu_layer, [5.0, 2.0], [6.0]),
    ]
    target = [
        ("Functional.embedding.0.forward", f"{npu}.embedding", [1.0], [2.0]),
        ("Functional.linear.0.forward", f"{npu}.rotary_pos_emb", [7.0, 8.0], [9.0]),
        ("Functional.linear.1.forward", f"{npu_layer}.mlp.dense_h_to_4h", [2.0, 0.5], [3.0]),
        ("Functional.gelu.0.forward", f"{npu_layer}.mlp", [3.0], [4.0]),
        ("Functional.linear.2.forward", f"{npu_layer}.mlp.dense_4h_to_h", [4.0, 0.25], [5.0 * planted]),
        ("Torch.add.0.forward", npu_layer, [5.0 * planted, 2.0], [6.0 * planted]),
    ]
    return (
        write_dump(tmp_path / "bench", "Module", REF_MODULES, ref),
        write_dump(tmp_path / "npu", "Module", TARGET_MODULES, target),
    )
