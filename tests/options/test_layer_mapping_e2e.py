"""A MindSpore model (NPU, the target: `Cell.network.layers.0.attention.dense.Dense.forward.0`) against its
PyTorch port (bench, the reference: `Module.model.layers.0.self_attn.o_proj.Linear.forward.0`), both dumped by
msprobe at level mix, compared with msprobe's layer mapping through `--map`, in the CLI and in the app.

The truth is the table MODEL: each row is one computation, the MindSpore call and cell next to the PyTorch
call and module that compute it, with the tensors it reads and writes. The dumps are written from it and the
expected pairing is read off it, not from dumptui's mapping code. The two feed-forward projections of the
SwiGLU run in opposite orders on the two sides (same type, same shapes), so only the cell names tell them
apart; a MindSpore-only adapter Dense shifts the dense counters by one."""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest
from helpers.app import make_app, plain, ready, run, space_until_converged, wait_until
from helpers.common import run_here
from helpers.msprobe_write import write_dump

from dumptui.core.formats import open_dump
from dumptui.core.ranks.merge import merge_ranks
from dumptui.options import mapfiles
from dumptui.report.reasons import say
from dumptui.tui.screens.error import OpenErrorScreen

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")

MS_MODULES = {"network": "GPT", "network.norm_out": "RMSNorm", "network.layers.1.feed_forward.adapter": "Dense"}
PT_MODULES = {"model": "GPT", "model.norm": "RMSNorm"}
for _i in range(2):
    MS_MODULES |= {f"network.layers.{_i}": "TransformerLayer", f"network.layers.{_i}.attention": "Attention"}
    MS_MODULES |= {f"network.layers.{_i}.attention.dense": "Dense", f"network.layers.{_i}.feed_forward": "FeedForward"}
    MS_MODULES |= {f"network.layers.{_i}.feed_forward.{w}": "Dense" for w in ("w1", "w2", "w3")}
    PT_MODULES |= {f"model.layers.{_i}": "DecoderLayer", f"model.layers.{_i}.self_attn": "Attention"}
    PT_MODULES |= {f"model.layers.{_i}.self_attn.o_proj": "Linear", f"model.layers.{_i}.mlp": "MLP"}
    PT_MODULES |= {f"model.layers.{_i}.mlp.{w}": "Linear" for w in ("gate_proj", "up_proj", "down_proj")}

# Keyed by the NPU side's classes, as msprobe's layer mapping is; the last two rename APIs called in a cell.
LAYER_MAPPING = """\
TopLayer:
  network: model
GPT:
  norm_out: norm
TransformerLayer:
  attention: self_attn
  feed_forward: mlp
Attention:
  dense: o_proj
FeedForward:
  w1: gate_proj
  w3: up_proj
  w2: down_proj
Dense:
  dense: linear
RMSNorm:
  rms_norm: npu_rms_norm
"""


class Row(NamedTuple):
    """One computation: the MindSpore call and its cell, the PyTorch call and its module ("" where a side does
    not make it), the tensors it reads (`w…` are weights, the rest outputs of earlier rows) and writes."""

    ms: str
    ms_cell: str
    pt: str
    pt_module: str
    reads: tuple[str, ...]
    out: str
    pt_late: bool = False  # PyTorch runs it after the next row


def _layer(i: int, ms_dense: int, pt_linear: int, x: str) -> list[Row]:
    """Transformer layer i on input tensor x; its MindSpore dense and PyTorch linear calls numbered from the
    given counters. MindSpore runs w1 (gate) before w3 (up); PyTorch runs up_proj before gate_proj."""
    ms, pt, t = f"network.layers.{i}", f"model.layers.{i}", f"l{i}"
    ff, mlp, attn = f"{ms}.feed_forward", f"{pt}.mlp", f"{pt}.self_attn"
    dense = [f"Functional.dense.{ms_dense + k}.forward" for k in range(5)]
    lin = [f"Functional.linear.{pt_linear + k}.forward" for k in range(4)]
    # layer 1 has a MindSpore-only adapter (its output unused) after the attention: its dense counters shift
    adapter = [Row(dense[1], f"{ff}.adapter", "", "", (f"{t}.h", f"w{t}a"), f"{t}.a")] if i == 1 else []
    w1, w3, w2 = dense[1 + len(adapter) : 4 + len(adapter)]
    return [
        Row(f"Mint.cast.{i}.forward", f"{ms}.attention", "", "", (x,), f"{t}.x16"),
        Row(f"Mint.matmul.{i}.forward", f"{ms}.attention", f"Torch.matmul.{i}.forward", attn, (x, f"w{t}q"), f"{t}.qk"),
        Row(f"Mint.softmax.{i}.forward", f"{ms}.attention", f"Torch.softmax.{i}.forward", attn, (f"{t}.qk",), f"{t}.p"),
        Row(dense[0], f"{ms}.attention.dense", lin[0], f"{attn}.o_proj", (f"{t}.p", f"w{t}o"), f"{t}.o"),
        Row(f"Tensor.__add__.{2 * i}.forward", ms, f"Tensor.__add__.{2 * i}.forward", pt, (f"{t}.o", x), f"{t}.h"),
        *adapter,
        Row(w1, f"{ff}.w1", lin[2], f"{mlp}.gate_proj", (f"{t}.h", f"w{t}g"), f"{t}.g", pt_late=True),
        Row(w3, f"{ff}.w3", lin[1], f"{mlp}.up_proj", (f"{t}.h", f"w{t}u"), f"{t}.u"),
        Row(f"MintFunctional.silu.{i}.forward", ff, f"Functional.silu.{i}.forward", mlp, (f"{t}.g",), f"{t}.s"),
        Row(f"Mint.mul.{i}.forward", ff, f"Torch.mul.{i}.forward", mlp, (f"{t}.s", f"{t}.u"), f"{t}.m"),
        Row(w2, f"{ff}.w2", lin[3], f"{mlp}.down_proj", (f"{t}.m", f"w{t}d"), f"{t}.f"),
        Row(
            f"Tensor.__add__.{2 * i + 1}.forward",
            ms,
            f"Tensor.__add__.{2 * i + 1}.forward",
            pt,
            (f"{t}.f", f"{t}.h"),
            f"{t}.y",
        ),
    ]


MODEL: list[Row] = [
    *_layer(0, ms_dense=0, pt_linear=0, x="x"),
    *_layer(1, ms_dense=4, pt_linear=4, x="l0.y"),  # dense 4-8 (5: the adapter), linear 4-7
    Row(
        "Mint.rms_norm.0.forward", "network.norm_out", "NPU.npu_rms_norm.0.forward", "model.norm", ("l1.y", "wn"), "out"
    ),
]
# the gate projection of layer 1: w1's dense (after the adapter's) against gate_proj's linear (after up_proj's)
PLANTED = ("Functional.linear.6.forward", "Functional.dense.6.forward")
EXPECTED = {(r.pt or None, r.ms): "map file" if r.pt else "only in target" for r in MODEL}


def write_pair(tmp_path, off: float = 1.5, rank: int = 0) -> tuple[str, str]:
    """The two dumps of MODEL; the NPU's PLANTED call returns `off` times the bench's value, and everything
    computed from it carries the error on. A tensor's value is its own number; a cast returns its input."""
    value: dict[str, float] = {"x": 1.0}
    scaled: set[str] = set()
    for k, row in enumerate(MODEL):
        for name in row.reads:
            value.setdefault(name, 100.0 + len(value))  # a weight
        value[row.out] = value[row.reads[0]] if "cast" in row.ms else 1.0 + 0.25 * k
        if row.ms == PLANTED[1] or any(r in scaled for r in row.reads):
            scaled.add(row.out)

    def on_ms(name: str) -> float:
        return value[name] * (off if name in scaled else 1.0)

    ms_calls = [(r.ms, r.ms_cell, [on_ms(t) for t in r.reads], [on_ms(r.out)]) for r in MODEL]
    pt_calls, held = [], []
    for r in MODEL:
        if r.pt:
            (held if r.pt_late else pt_calls).append((r.pt, r.pt_module, [value[t] for t in r.reads], [value[r.out]]))
        if held and not r.pt_late:
            pt_calls += held
            held = []
    return (
        write_dump(tmp_path / "pytorch", "Module", PT_MODULES, pt_calls, rank=rank),
        write_dump(tmp_path / "mindspore", "Cell", MS_MODULES, ms_calls, framework="mindspore", rank=rank),
    )


def _compare(ref, target, *extra):
    rc, out, err = run_here("compare", ref, target, "--json", *extra)
    assert rc in (0, 1), err
    return json.loads(out)


def _calls(ops) -> dict:
    return {(o["ref"], o["target"]): o["paired_by"] for o in ops if "forward" in (o["ref"] or o["target"])}


def test_the_cli_pairs_cells_with_modules_by_the_layer_mapping(tmp_path):
    ref, target = write_pair(tmp_path)
    # without the map, positions would pair the swapped projections wrongly (PyTorch's down_proj with
    # MindSpore's w3); the dataflow places them (their producers and consumers pair), all but the first call,
    # whose producer is outside the dump; the map names every one
    plain = _calls(_compare(ref, target)["ops"])
    assert ("Functional.linear.7.forward", "Functional.dense.7.forward") not in plain
    assert {k for k in plain if k not in EXPECTED} == {
        (None, "Mint.rms_norm.0.forward"),
        ("NPU.npu_rms_norm.0.forward", None),
    }
    f = tmp_path / "layer_mapping.yaml"
    f.write_text(LAYER_MAPPING)
    assert _calls(_compare(ref, target, "--map", f)["ops"]) == EXPECTED
    rc, out, err = run_here("bisect", ref, target, "--json", "--map", f)
    assert rc == 1, err
    culprit = json.loads(out)["culprit"]
    assert (culprit["ref"], culprit["target"]) == PLANTED

    # without the rule that renames MindSpore's dense to PyTorch's linear, no Dense call finds its Linear
    f.write_text(LAYER_MAPPING.replace("Dense:\n  dense: linear\n", ""))
    mapped = {k for k, how in _calls(_compare(ref, target, "--map", f)["ops"]).items() if how == "map file"}
    assert mapped == {pair for pair in EXPECTED if pair[0] and "linear" not in pair[0]}


def test_a_clean_pair_has_no_culprit(tmp_path):
    """The same model without the planted error: every pair the mapping makes agrees."""
    ref, target = write_pair(tmp_path, off=1.0)
    f = tmp_path / "layer_mapping.yaml"
    f.write_text(LAYER_MAPPING)
    rc, out, err = run_here("bisect", ref, target, "--json", "--map", f)
    assert rc == 0 and json.loads(out)["culprit"] is None, out + err


def test_the_app_pairs_by_the_layer_mapping_and_finds_the_planted_call(tmp_path):
    ref, target = write_pair(tmp_path)
    f = tmp_path / "layer_mapping.yaml"
    f.write_text(LAYER_MAPPING)

    async def go():
        app = make_app(ref, target, "--map", f)
        async with app.run_test(size=(120, 36)) as pilot:
            scr = await ready(app, pilot)
            pairs = scr.controller.session.alignment.pairs
            named = {(p.ref and p.ref.name, p.target and p.target.name): say(p.how) for p in pairs}
            assert {k: how for k, how in named.items() if "forward" in (k[0] or k[1])} == EXPECTED
            await space_until_converged(scr, pilot)
            culprit = pairs[scr.bstate.culprit.index]
            assert (culprit.ref.name, culprit.target.name) == PLANTED

    run(go())


def test_the_app_shows_a_malformed_layer_mapping_with_its_path(tmp_path):
    ref, target = write_pair(tmp_path)
    f = tmp_path / "layer_mapping.yaml"
    f.write_text(LAYER_MAPPING.replace("  norm_out: norm\n", "  norm_out: [norm]\n"))

    async def go():
        app = make_app(ref, target, "--map", f)
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_until(lambda: isinstance(app.screen, OpenErrorScreen) and app.screen.query("#error-reason"))
            assert plain(app.screen.query_one("#error-path")).endswith(str(f))
            assert "GPT: norm_out: ['norm'] is not a module name" in plain(app.screen.query_one("#error-reason"))
            await pilot.press("enter")
            await pilot.pause()
        return app.return_code

    assert run(go()) == 2


def test_every_rank_is_mapped_through_its_own_construct_json(tmp_path):
    """`bisect --rank all`: each rank's pair is mapped through its own construct.json; the planted error is on
    rank 1 only. Several ranks opened as one (the app's --rank all) have no one construct.json: refused."""
    write_pair(tmp_path, off=1.0, rank=0)
    ref, target = write_pair(tmp_path, rank=1)
    f = tmp_path / "layer_mapping.yaml"
    f.write_text(LAYER_MAPPING)
    rc, out, err = run_here("bisect", ref, target, "--rank", "all", "--json", "--map", f)
    assert rc == 1, err
    report = json.loads(out)
    culprits = {u["rank"]: u["report"]["culprit"] for u in report["units"]}
    assert culprits["0"] is None and (culprits["1"]["ref"], culprits["1"]["target"]) == PLANTED
    assert [(r["rank"], r["op"]) for r in report["first_divergence"]["first"]] == [("1", PLANTED[0])]

    merged = [merge_ranks({r: open_dump(path, rank=r) for r in ("0", "1")}, path) for path in (ref, target)]
    with pytest.raises(ValueError, match="one rank's construct.json: choose the rank with --rank N"):
        mapfiles.read_pairs(str(f), *merged)
