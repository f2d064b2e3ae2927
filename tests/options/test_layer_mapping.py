"""msprobe's layer mapping yaml for `--map`: module paths renamed through construct.json, API calls paired, as
msprobe's core/compare/layer_mapping/ does it (the expected pairs are msprobe's: its documented example, its
unit test's expected mapping, its renumber pass). Dumps written by msprobe_write.py; a MindSpore model against its
PyTorch port through the CLI and the app: test_layer_mapping_e2e.py."""

from __future__ import annotations

import json

import pytest
from helpers.common import SHARED, run_here
from helpers.msprobe_write import DOC_YAML, write_dump, write_megatron_pair

from dumptui.core.formats import open_dump
from dumptui.options import mapfiles

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")

# msprobe's documented example (docs/zh/examples/layer_mapping_example.md): a Megatron model on the NPU side,
# Megatron-core on the bench side; the NPU has an extra `language_model` level and other class names.


def test_layer_mapping_pairs_the_calls_under_renamed_modules(tmp_path):
    ref, target = write_megatron_pair(tmp_path)
    f = tmp_path / "mapping.yaml"
    f.write_text(DOC_YAML)
    pairs = mapfiles.read_pairs(str(f), open_dump(ref), open_dump(target))
    # every target call at a scope the reference has, names equal or not (forced, so the mapping wins); the
    # rotary embedding's linear.0 has no counterpart (the bench has no rotary_pos_emb)
    same = [
        (f"{api}.0.forward", f"{api}.0.forward") for api in ("Functional.embedding", "Functional.gelu", "Torch.add")
    ]
    linears = [
        ("Functional.linear.0.forward", "Functional.linear.1.forward"),
        ("Functional.linear.1.forward", "Functional.linear.2.forward"),
    ]
    assert sorted(pairs) == sorted(same + linears)
    # rules sharing a first segment are tried longest first, whatever their order in the file
    f.write_text(DOC_YAML.replace("GPTModel:\n", "GPTModel:\n  language_model: language_model\n"))
    assert sorted(mapfiles.read_pairs(str(f), open_dump(ref), open_dump(target))) == sorted(same + linears)
    # without the ParallelMLP rules the linears are at dense_h_to_4h, a path the bench does not have (and
    # without the embedding's rule, the embedding at language_model.embedding)
    f.write_text("TopLayer:\n  module: model\nGPTModel:\n  language_model.encoder: decoder\n")
    assert sorted(mapfiles.read_pairs(str(f), open_dump(ref), open_dump(target))) == sorted(same[1:])
    # without a TopLayer rule nothing is where the bench has it (module.… vs model.…)
    f.write_text("GPTModel:\n  language_model.encoder: decoder\n")
    assert mapfiles.read_pairs(str(f), open_dump(ref), open_dump(target)) == []


def _bisect(ref, target, *extra):
    rc, out, err = run_here("bisect", ref, target, "--json", *extra)
    assert rc in (0, 1), err
    return json.loads(out)


def _ops(ref, target, *extra):
    rc, out, err = run_here("compare", ref, target, "--json", *extra)
    assert rc in (0, 1), err
    return {(o["ref"], o["target"]): o["paired_by"] for o in json.loads(out)["ops"]}


def test_bisect_names_the_planted_op_only_with_the_layer_mapping(tmp_path):
    ref, target = write_megatron_pair(tmp_path)
    planted = ("Functional.linear.1.forward", "Functional.linear.2.forward")
    f = tmp_path / "mapping.yaml"
    f.write_text(DOC_YAML)

    # without the mapping, names pair the bench's MLP linears with the NPU's rotary and first MLP linear, and
    # the planted call is left alone
    ops = _ops(ref, target)
    assert ops[("Functional.linear.0.forward", "Functional.linear.0.forward")] == "exact name"
    assert ops[(None, "Functional.linear.2.forward")] == "only in target"
    culprit = _bisect(ref, target)["culprit"]
    assert culprit is None or (culprit["ref"], culprit["target"]) != planted

    ops = _ops(ref, target, "--map", f)
    assert ops[planted] == "map file"
    assert ops[("Functional.linear.0.forward", "Functional.linear.1.forward")] == "map file"
    assert ops[(None, "Functional.linear.0.forward")] == "only in target"  # the rotary embedding's linear
    assert ops[("Torch.add.0.forward", "Torch.add.0.forward")] == "map file"  # the mapping's pair, though names agree
    culprit = _bisect(ref, target, "--map", f)["culprit"]
    assert (culprit["ref"], culprit["target"]) == planted


def test_cross_framework_mapping_as_msprobe_expects_it(tmp_path):
    """MindSpore cells (NPU) against PyTorch modules (bench), with the rules and the expected call pairs of
    msprobe's own unit test of generate_api_mapping_by_layer_mapping (msprobe/test/mindspore_ut/compare/
    test_layer_mapping.py): APIs renamed by a rule, a rule spanning a module and an API, a backward call.
    Its `Tensor.__add__` calls are left out: two top-level calls there are told apart by the framework
    function of their old-style stack.json, which msprobe 26.x's stack.json (keyed by index) no longer gives."""
    lm, layer = "language_model", "language_model.encoder.layers.0"
    emb = f"{lm}.embedding.word_embeddings"
    ms_modules = {
        f"network_with_loss.module.{lm}.embedding": "Embedding",
        f"network_with_loss.module.{emb}": "VocabParallelEmbedding",
        f"network_with_loss.module.{emb}.reduce_from_mp_region": "ReduceFromModelParallelRegion",
        f"network_with_loss.module.{lm}.encoder": "ParallelTransformer",
        f"network_with_loss.module.{layer}": "ParallelTransformerLayer",
        f"network_with_loss.module.{layer}.input_norm": "FusedRMSNorm",
        f"network_with_loss.module.{layer}.attention": "ParallelAttention",
    }
    pt_modules = {
        f"module.module.{emb}": "VocabParallelEmbedding",
        f"module.module.{layer}": "ParallelTransformerLayer",
        f"module.module.{layer}.input_norm": "RMSNorm",
        f"module.module.{layer}.self_attention": "ParallelAttention",
        f"module.module.{layer}.self_attention.core_attention_flash": "FlashSelfAttention",
    }
    ms, pt = "network_with_loss.module", "module.module"
    target = [
        ("Tensor.__add__.0.forward", "", [1.0], [2.0]),  # msprobe's __add__.1 (see above)
        ("Mint.logical_or.0.forward", f"{ms}.{emb}", [2.0], [3.0]),
        ("Distributed.all_reduce.0.forward", f"{ms}.{emb}.reduce_from_mp_region", [3.0], [4.0]),
        ("Primitive.norm.RmsNorm.0.forward", f"{ms}.{layer}.input_norm", [4.0], [5.0]),
        ("Mint.cos.0.forward", f"{ms}.{layer}.attention", [5.0], [6.0]),
        ("Functional.flash_attention_score.0.forward", f"{ms}.{layer}.attention", [6.0], [7.0]),
        # no parent here (msprobe's test has ParallelAttention.backward.0): a backward call takes the scope of
        # its forward call, as msprobe's backward pass does
        ("Functional.flash_attention_score.0.backward", "", [7.0], [8.0]),
    ]
    ref = [
        ("Tensor.__add__.0.forward", "", [1.0], [2.0]),
        ("Tensor.__or__.0.forward", f"{pt}.{emb}", [2.0], [3.0]),
        ("Distributed.all_reduce.0.forward", f"{pt}.{emb}", [3.0], [4.0]),
        ("NPU.npu_rms_norm.0.forward", f"{pt}.{layer}.input_norm", [4.0], [5.0]),
        ("Torch.cos.0.forward", f"{pt}.{layer}.self_attention", [5.0], [6.0]),
        ("NPU.npu_fusion_attention.0.forward", f"{pt}.{layer}.self_attention.core_attention_flash", [6.0], [7.0]),
        ("NPU.npu_fusion_attention.0.backward", f"{pt}.{layer}.self_attention.core_attention_flash", [7.0], [8.0]),
    ]
    f = tmp_path / "layer_mapping.yaml"
    f.write_text(
        "Cell:\n  network_with_loss: module\n"  # msprobe's older key for the top level
        "VocabParallelEmbedding:\n  logical_or: __or__\n  reduce_from_mp_region.all_reduce: all_reduce\n"
        "ParallelTransformerLayer:\n  attention: self_attention\n"
        "ParallelAttention:\n  flash_attention_score: core_attention_flash.npu_fusion_attention\n"
        "FusedRMSNorm:\n  RmsNorm: npu_rms_norm(the fused kernel)\n"
    )
    pairs = mapfiles.read_pairs(
        str(f),
        open_dump(write_dump(tmp_path / "pt", "Module", pt_modules, ref)),
        open_dump(write_dump(tmp_path / "ms", "Cell", ms_modules, target, framework="mindspore")),
    )
    # msprobe's expected api mapping, NPU -> bench, less the module calls (not ops of dumptui)
    assert sorted((t, r) for r, t in pairs) == sorted(
        {
            "Tensor.__add__.0.forward": "Tensor.__add__.0.forward",
            "Mint.logical_or.0.forward": "Tensor.__or__.0.forward",
            "Distributed.all_reduce.0.forward": "Distributed.all_reduce.0.forward",
            "Primitive.norm.RmsNorm.0.forward": "NPU.npu_rms_norm.0.forward",
            "Mint.cos.0.forward": "Torch.cos.0.forward",
            "Functional.flash_attention_score.0.forward": "NPU.npu_fusion_attention.0.forward",
            "Functional.flash_attention_score.0.backward": "NPU.npu_fusion_attention.0.backward",
        }.items()
    )


def _stage(root, first_layer: int, first_call: int, encoder_class: str) -> str:
    """Two transformer layers under `encoder`, numbered from `first_layer`, one linear call each."""
    layers = [f"encoder.layers.{first_layer + i}" for i in range(2)]
    modules = {"encoder": encoder_class} | {path: "ParallelTransformerLayer" for path in layers}
    calls = [
        (f"Functional.linear.{first_call + i}.forward", path, [float(i)], [float(i + 1)])
        for i, path in enumerate(layers)
    ]
    return write_dump(root, "Module", modules, calls)


def test_parallel_transformer_layers_are_renumbered_from_zero(tmp_path):
    """A pipeline stage numbers its layers globally on one side (8, 9) and locally on the other (0, 1):
    msprobe counts the layers of a ParallelTransformer from 0 on each side, and of no other class."""
    f = tmp_path / "m.yaml"
    f.write_text("TopLayer:\n  encoder: encoder\n")
    ref = open_dump(_stage(tmp_path / "local", 0, 5, "ParallelTransformer"))
    stage = open_dump(_stage(tmp_path / "stage1", 8, 0, "ParallelTransformer"))
    assert mapfiles.read_pairs(str(f), ref, stage) == [
        ("Functional.linear.5.forward", "Functional.linear.0.forward"),
        ("Functional.linear.6.forward", "Functional.linear.1.forward"),
    ]
    block = open_dump(_stage(tmp_path / "block", 8, 0, "TransformerBlock"))
    assert mapfiles.read_pairs(str(f), ref, block) == []  # layers.8 and layers.9: the reference has neither
    # a level without a module call of its own (the ModuleList `layers`) is keyed by its name, as msprobe does
    f.write_text("layers:\n  '8': '0'\n  '9': '1'\n")
    assert len(mapfiles.read_pairs(str(f), ref, block)) == 2


def test_on_the_construct_json_msprobe_wrote(tmp_path):
    """msprobe 26.2's own construct.json (PyTorch, level mix: conv1, pool called twice, conv2, fc1, fc2; relu
    and softmax at the top level). A rule swapping fc1 and fc2 swaps their linears; every other call
    keeps its own name's counterpart, the pool's two max_pool2d calls by their order."""
    mp = SHARED / "msprobe-26.2-pytorch-cpu" / "dumps" / "tensor_mix"
    if not mp.is_dir():
        pytest.skip(f"shared msprobe fixtures absent ({mp})")
    f = tmp_path / "layer_mapping.yaml"  # nothing is written beside a dump
    f.write_text("TopLayer:\n  fc1: fc2\n  fc2: fc1\n")
    same = ["conv2d.0", "conv2d.1", "relu.0", "relu.1", "relu.2", "max_pool2d.0", "max_pool2d.1", "softmax.0"]
    expected = {(f"Functional.{c}.forward",) * 2: "map file" for c in same}
    expected[("Functional.linear.1.forward", "Functional.linear.0.forward")] = "map file"
    expected[("Functional.linear.0.forward", "Functional.linear.1.forward")] = "map file"
    ops = _ops(mp / "ref", mp / "rerun", "--map", f)
    assert {k: v for k, v in ops.items() if "forward" in (k[0] or k[1])} == expected  # the calls, not the weights


@pytest.mark.parametrize(
    "text, reason",
    [
        ("TopLayer:\n  module: model\nGPTModel:\n", "GPTModel should map module names"),
        ("TopLayer:\n  module: 3\n", "TopLayer: module: 3 is a number; quote it"),
        ("TopLayer:\n  module..x: model\n", "has an empty segment"),
        ("TopLayer:\n  module: [model]\n", "is not a module name"),
    ],
)
def test_malformed_layer_mapping_exit_2_with_path_and_reason(tmp_path, text, reason):
    ref, target = write_megatron_pair(tmp_path)
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    rc, out, err = run_here("bisect", ref, target, "--map", f)
    assert rc == 2 and str(f) in err and reason in err, err


def test_layer_mapping_needs_msprobe_dumps_with_construct_json(tmp_path, demo_pair):
    ref, target = write_megatron_pair(tmp_path)
    f = tmp_path / "mapping.yaml"
    f.write_text(DOC_YAML)
    rc, out, err = run_here("compare", demo_pair.ref, demo_pair.target, "--map", f)
    assert rc == 2 and str(f) in err and "needs msprobe dumps" in err, err
    construct = tmp_path / "npu" / "step0" / "rank0" / "construct.json"
    construct.write_text("[1, 2]")
    rc, out, err = run_here("compare", ref, target, "--json", "--map", f)
    assert rc == 2 and str(construct) in json.loads(out)["error"]["reason"]
    construct.write_text("{}")  # level L1: no module structure, msprobe maps nothing either
    rc, out, err = run_here("compare", ref, target, "--map", f)
    assert rc == 2 and str(f) in err and f"{construct}: empty, the target has no module structure" in err, err
    construct.unlink()
    rc, out, err = run_here("compare", ref, target, "--map", f)
    assert rc == 2 and str(f) in err and str(construct) in err, err
