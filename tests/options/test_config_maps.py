"""The TOML config file (flags win over it) and msprobe's mapping yamls for `--map`."""

from __future__ import annotations

import json

import pytest
from helpers.common import SHARED, run_here

from dumptui.core.model.dump import KERNEL, PARAMETER, Dump, Op
from dumptui.options import config, mapfiles

# one pool of worker processes for the module's in-process commands
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def run(args, env_extra=None, cwd=None):
    """`dumptui ARGS` in this process (run_here): what the config and the maps change is the question here."""
    return run_here(*args, cwd=cwd, env_extra=env_extra)


def test_config_file_sets_defaults_and_flags_win(demo_pair, tmp_path):
    home = tmp_path / "xdg"
    (home / "dumptui").mkdir(parents=True)
    (home / "dumptui" / "config.toml").write_text("gain = 0.5\nreplay = false\n")
    env = {"XDG_CONFIG_HOME": str(home)}
    # the same change of verdict as `--no-replay --gain 0.5` (test_cli.test_thresholds_change_the_verdict)
    rc, out, err = run(["bisect", demo_pair.ref, demo_pair.target, "--json"], env)
    assert rc == 1, err
    assert json.loads(out)["culprit"]["ref"] != demo_pair.planted
    rc, out, err = run(["bisect", demo_pair.ref, demo_pair.target, "--json", "--gain", "10"], env)
    assert json.loads(out)["culprit"]["ref"] == demo_pair.planted  # the flag wins (with the file's no-replay)
    rc, out, err = run(["bisect", demo_pair.ref, demo_pair.target, "--json", "--no-config"], env)
    assert json.loads(out)["culprit"]["ref"] == demo_pair.planted


def test_bad_config_file_exit_2_with_path(demo_pair, tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text("gian = 3\n")
    rc, out, err = run(["bisect", demo_pair.ref, demo_pair.target], {"DUMPTUI_CONFIG": str(bad)})
    assert rc == 2 and str(bad) in err and "unknown setting gian" in err
    bad.write_text("gain = [")
    rc, out, err = run(["compare", demo_pair.ref, demo_pair.target, "--json"], {"DUMPTUI_CONFIG": str(bad)})
    assert rc == 2 and "not valid TOML" in json.loads(out)["error"]["reason"]
    rc, out, err = run(["bisect", demo_pair.ref, demo_pair.target], {"DUMPTUI_CONFIG": str(tmp_path / "none.toml")})
    assert rc == 2 and "config file not found" in err


def test_config_values_and_paths(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('floor = {float16 = 2e-3}\nignore = ["*Dropout*"]\nmap = "pairs.csv"\nmax_off = 0.2\ncos = 0.99\n')
    got = config.load(str(f), env={})
    assert got == {
        "floor": ["float16=0.002"],
        "ignore": ["*Dropout*"],
        "map": str(tmp_path / "pairs.csv"),
        "max_off": 0.2,
        "cos": 0.99,
    }
    f.write_text('gain = "ten"\n')
    with pytest.raises(config.ConfigError, match="gain must be a number"):
        config.load(str(f), env={})
    assert config.config_path({"XDG_CONFIG_HOME": "/x"}) == "/x/dumptui/config.toml"
    assert config.config_path({"HOME": "/h"}) == "/h/.config/dumptui/config.toml"
    assert config.load(env={"XDG_CONFIG_HOME": str(tmp_path / "absent")}) == {}


def _dump(names, kind=KERNEL):
    d = Dump("/d", "/d", "msprobe")
    d.ops = [Op(name=n, op_type=n.split(".")[1] if "." in n else n, kind=kind) for n in names]
    return d


def test_msprobe_data_mapping(tmp_path):
    f = tmp_path / "data_mapping.yaml"
    f.write_text(
        "Functional.flash_attention_score.4.forward.input.0: NPU.npu_fusion_attention.4.forward.input.0\n"
        "Functional.flash_attention_score.4.forward.output.0: NPU.npu_fusion_attention.4.forward.output.0\n"
    )
    pairs = mapfiles.read_pairs(str(f), _dump([]), _dump([]))
    # NPU (target) -> bench (reference): dumptui's pairs are (reference op, target op)
    assert pairs == [("NPU.npu_fusion_attention.4.forward", "Functional.flash_attention_score.4.forward")]


def test_msprobe_api_mapping(tmp_path):
    f = tmp_path / "api_mapping.yaml"
    f.write_text("- ms_api: Functional.conv2d\n  pt_api: Torch.conv2d\n  ms_args: [0, 1]\n  pt_args: [0, 1]\n")
    target = _dump(["Functional.conv2d.0.forward", "Functional.conv2d.1.forward", "Functional.relu.0.forward"])
    ref = _dump(["Torch.conv2d.0.forward", "Functional.relu.0.forward"])
    assert mapfiles.read_pairs(str(f), ref, target) == [("Torch.conv2d.0.forward", "Functional.conv2d.0.forward")]


def test_msprobe_cell_mapping(tmp_path):
    f = tmp_path / "cell_mapping.yaml"
    f.write_text("fc2.Dense: head.Linear\n")
    target = _dump(["fc2.weight", "fc2.bias", "fc1.weight"], PARAMETER)
    ref = _dump(["head.weight", "head.bias", "fc1.weight"], PARAMETER)
    assert mapfiles.read_pairs(str(f), ref, target) == [("head.weight", "fc2.weight"), ("head.bias", "fc2.bias")]


def test_layer_mapping_and_junk_are_named(tmp_path):
    f = tmp_path / "layer_mapping.yaml"
    f.write_text("TopLayer:\n  network_with_loss: module\nNetwork:\n  layers: layers\n")
    # a layer mapping is read (test_layer_mapping.py): it walks construct.json, which these dumps lack
    with pytest.raises(ValueError, match="construct.json"):
        mapfiles.read_pairs(str(f), _dump([]), _dump([]))
    f.write_text("- 1\n- 2\n")
    with pytest.raises(ValueError, match="not an msprobe mapping"):
        mapfiles.read_pairs(str(f), _dump([]), _dump([]))
    f.write_text("a: [")
    with pytest.raises(ValueError, match="not valid YAML"):
        mapfiles.read_pairs(str(f), _dump([]), _dump([]))


def test_yaml_map_through_the_cli(tmp_path):
    """A data mapping forces a pair msprobe names differently on the two sides (here: two calls of relu)."""
    mp = SHARED / "msprobe-26.2-pytorch-cpu" / "dumps" / "tensor_mix"
    if not mp.is_dir():
        pytest.skip(f"shared msprobe fixtures absent ({mp})")
    f = tmp_path / "data_mapping.yaml"
    f.write_text("Functional.relu.1.forward.output.0: Functional.relu.2.forward.output.0\n")
    rc, out, err = run(["compare", mp / "ref", mp / "rerun", "--json", "--map", f])
    assert rc == 0, err
    d = json.loads(out)
    mapped = [o for o in d["ops"] if o["paired_by"] == "map file"]
    assert [(o["ref"], o["target"]) for o in mapped] == [("Functional.relu.2.forward", "Functional.relu.1.forward")]
    bad = tmp_path / "bad.yaml"
    bad.write_text("x: [")
    rc, out, err = run(["compare", mp / "ref", mp / "rerun", "--map", bad])
    assert rc == 2 and str(bad) in err and "YAML" in err
