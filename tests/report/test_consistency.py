"""Every sentence shown for a culprit agrees with every number shown beside it: the text and the numbers of
each root of every generated pair (and of every shared fixture pair, when present) are read from
`bisect --json` and checked against each other by rules that do not share code with the engine."""

from __future__ import annotations

import json
import re

import pytest
from helpers.common import SHARED

from dumptui import cli
from dumptui.core.demo.compiled import VARIANTS as COMPILED
from dumptui.core.demo.compiled import write_compiled_demo
from dumptui.core.demo.noisy import write_noisy_demo
from dumptui.core.demo.quantised import VARIANTS, write_quantised_demo
from dumptui.report.reasons import say

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")

NUMBER = r"([0-9.]+(?:e[+-]?[0-9]+)?|inf)"


def _num(text: str) -> float:
    return float("inf") if text == "inf" else float(text)


def _close(shown: str, value: float | None) -> bool:
    """A number printed with 3 significant digits (`fmt_rel`) matches the JSON's value."""
    if value is None:
        return False
    v = _num(shown)
    return v == value or abs(v - value) <= 6e-3 * max(abs(v), abs(value))


def contradictions(root: dict, remedy: dict | None) -> list[str]:
    """Where a root's words and its numbers disagree (empty when they agree)."""
    out: list[str] = []
    le = root.get("local_error") or {}
    for text in (root["why"], le.get("why") or ""):
        out += _agreement_claims(text, root, le)
        out += _number_claims(text, le)
        if "benign" in text or "carried precision noise" in text:
            out.append(f"a root called benign or carried noise: {text}")
    out += _root_claims(root, le)
    for c in (remedy or {}).get("culprits", []):
        out += _remedy_claims(c)
    return out


def _agreement_claims(text: str, root: dict, le: dict) -> list[str]:
    """'inputs agree': no input error above the floor, no diverged input the text does not name."""
    if not re.search(r"\binputs agree\b(?! within)", text):
        return []
    out: list[str] = []
    floor, in_err = le.get("floor"), le.get("input_error")
    if in_err is not None and floor is not None and in_err > floor:
        out.append(f"'inputs agree' beside inputs that carry {in_err} > floor {floor}: {text}")
    named = set(re.findall(r"\(?(input\.\d+)\)? differs", text))  # said to differ: not among "agree"
    inputs = {f"input.{t['slot']}": t for t in root.get("inputs", [])}
    bad = [k for k, t in inputs.items() if t["verdict"] == "diverged" and k not in named]
    if bad and root["kind"] == "outputs":
        out.append(f"'inputs agree' beside diverged {bad}: {text}")
    return out


def _number_claims(text: str, le: dict) -> list[str]:
    """The input error, the output error against its floor and the gain, as printed, against the JSON's."""
    out: list[str] = []
    for m in re.finditer(r"inputs carry " + NUMBER, text):
        if not _close(m.group(1), le.get("input_error")):
            out.append(f"'inputs carry {m.group(1)}' but the input error is {le.get('input_error')}")
    for m in re.finditer(r"output error " + NUMBER + r" > \w+ floor " + NUMBER, text):
        if not _num(m.group(1)) > _num(m.group(2)):
            out.append(f"'output error {m.group(1)} > floor {m.group(2)}' is false")
        if not _close(m.group(1), le.get("output_error")):
            out.append(f"'output error {m.group(1)}' but output_error is {le.get('output_error')}")
    for m in re.finditer(r"error grows x" + NUMBER, text):
        if not _close(m.group(1), le.get("gain")):
            out.append(f"'grows x{m.group(1)}' but the gain is {le.get('gain')}")
    return out


def _root_claims(root: dict, le: dict) -> list[str]:
    """A root is never its local error's 'carried' or 'benign', and its replay's numbers are the text's."""
    out: list[str] = []
    if le and root["kind"] == "outputs" and le.get("kind") not in ("root", None):
        out.append(f"a root whose local error says {le.get('kind')}: {le.get('why')}")
    for t in root.get("outputs", []):
        if "carried precision noise" in (t.get("reason") or ""):
            out.append(f"a root's {t['io']}.{t['slot']} called carried precision noise")
    for c in root.get("caveats", []):
        if "benign" in c:
            out.append(f"a root's caveat says benign: {c}")
    rp = le.get("replay")
    if rp and "given its own inputs" in root["why"]:
        m = re.search(r"target output is off by " + NUMBER + r".*reference's by " + NUMBER, root["why"])
        if m and not (_close(m.group(1), rp["target_deviation"]) and _close(m.group(2), rp["reference_deviation"])):
            out.append(f"replay numbers in the text {m.groups()} differ from {rp}")
    return out


def _remedy_claims(c: dict) -> list[str]:
    """A remedy's culprit: 'within the floor', 'reproduces' and 'another function' agree with its numbers."""
    out: list[str] = []
    m = re.search(r"off by " + NUMBER + r" of its RMS, within the \w+ floor " + NUMBER, c["sentence"])
    if m and _num(m.group(1)) > _num(m.group(2)):
        out.append(f"'within the floor' but {m.group(1)} > {m.group(2)}")
    if c["cause"] == "precision" and c["how"] == "reproduces":
        replayed = c["target_vs_device_replay"]
        if not (replayed <= c["floor"] and replayed < c["target_vs_exact"]):
            out.append(f"'reproduces' but the numbers say otherwise: {c}")
    if c["cause"] == "semantics" and (c.get("target_vs_exact") or 0) <= (c.get("floor") or 0):
        out.append(f"'another function' while the target matches the op within the floor: {c}")
    return out


def _bisect(capsys, ref: str, target: str, *extra: str) -> dict:
    capsys.readouterr()
    cli.main(["bisect", ref, target, *extra, "--json", "-"])
    return json.loads(capsys.readouterr().out)


def _all_roots(doc: dict) -> list[dict]:
    roots = [doc["culprit"]] if doc.get("culprit") else []
    return roots


def _check(doc: dict, label: str) -> list[str]:
    return [f"{label}: {p}" for r in _all_roots(doc) for p in contradictions(r, doc.get("remedy"))]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("consistency")
    pairs = [(f"quantised {v}", write_quantised_demo(str(root / v), v)) for v in VARIANTS]
    for bug in ("main", "branch", "discontinuous"):
        pairs.append((f"noisy fp16 {bug}", write_noisy_demo(str(root / f"noisy-{bug}"), "fp16", bug, blocks=12)))
    pairs += [(f"compiled {v}", write_compiled_demo(str(root / f"compiled-{v}"), v)) for v in COMPILED]
    return pairs


def test_generated_culprits_say_what_their_numbers_say(generated, capsys):
    problems: list[str] = []
    culprits = 0
    for label, demo in generated:
        for extra in ((), ("--cos", "0.999"), ("--max-off", "0.002")):
            doc = _bisect(capsys, demo.ref, demo.target, *extra)
            culprits += doc["culprit"] is not None
            problems += _check(doc, f"{label} {' '.join(extra)}")
    assert culprits >= 13  # the rules were applied to real culprits, not to none
    assert not problems, "\n".join(problems)


def test_the_checker_sees_a_contradiction():
    """The rules above can fail: a root whose text says 'inputs agree' beside an input that carries error."""
    root = {
        "kind": "outputs",
        "why": "inputs agree, outputs diverge",
        "inputs": [{"slot": 0, "io": "input", "verdict": "diverged", "reason": "error 4.14e-01 of its RMS"}],
        "outputs": [],
        "caveats": [],
        "local_error": {
            "kind": "root",
            "why": "inputs carry 4.14e-01, output error 2.00e-01 > float16 floor 9.77e-04",
            "input_error": 0.0414,
            "output_error": 0.2,
            "floor": 9.77e-4,
            "gain": 5.0,
        },
    }
    found = contradictions(root, None)
    assert any("'inputs agree' beside" in p for p in found)
    assert any("'inputs carry 4.14e-01'" in p for p in found)


def _fixture_pairs() -> list[tuple[str, str, str]]:
    out = []
    ms = SHARED / "mindspore-2.10-cpu" / "dumps"
    for t in ("B_pad", "B_mod", "C_fp16"):
        out.append((f"mindspore A vs {t}", str(ms / "A"), str(ms / t)))
    noisy = SHARED / "mindspore-2.10-noisy"
    try:
        for name, p in json.loads((noisy / "ground_truth.json").read_text())["pairs"].items():
            out.append((f"noisy {name}", str(noisy / p["ref"]), str(noisy / p["target"])))
    except (OSError, ValueError, KeyError):
        pass
    tr = SHARED / "mindspore-2.10-transformed" / "dumps"
    for t in ("det_F16", "det_FOLD", "det_INT8", "det_BNVAR", "det_L2SAT"):
        out.append((f"transformed {t}", str(tr / "det_REF"), str(tr / t)))
    return out


def test_fixture_culprits_say_what_their_numbers_say(capsys):
    pairs = [(label, r, t) for label, r, t in _fixture_pairs() if __import__("os").path.isdir(t)]
    if not pairs:
        pytest.skip(f"shared fixtures absent ({SHARED} not found): real-dump test skipped")
    problems: list[str] = []
    for label, ref, target in pairs:
        problems += _check(_bisect(capsys, ref, target), label)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "label", ["quantised fold-var", "quantised mod", "compiled concat-swap", "noisy fp16 discontinuous"]
)
def test_one_sentence_per_culprit_in_json_text_and_app(generated, label, capsys):
    """The culprit's why and hints are one sentence each, said alike by `bisect --json`, `bisect`'s text and
    the app's culprit panel (whitespace aside: the text and the panel wrap)."""
    from helpers.app import opened, run, wait_until

    info = dict(generated)[label]
    doc = _bisect(capsys, info.ref, info.target)
    culprit = doc["culprit"]
    assert culprit is not None, label
    capsys.readouterr()
    cli.main(["bisect", info.ref, info.target])
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    for sentence in [culprit["why"], *culprit["hints"]]:
        assert re.sub(r"\s+", " ", sentence) in text, (label, sentence)

    async def go():
        async with opened(info.ref, info.target) as (app, pilot, scr):
            await pilot.press("a")
            await wait_until(lambda: scr.bstate.finished and not scr.bisect_task, what="the bisection to converge")
            c = scr.bstate.culprit
            assert c is not None and c.index + 1 == culprit["position"]
            assert c.why == culprit["why"], (c.why, culprit["why"])
            assert [h for _kind, h in c.hints] == culprit["hints"]

    run(go())


def test_a_roots_hints_are_the_same_in_its_op_entry_and_its_root_entry(capsys):
    """compare --json: an op that is a root carries the hints its root entry carries (one sentence each): the
    real FloorMod -> Mod pair, whose discontinuity hint said "benign" in the op entry and "not benign" beside
    the root."""
    dumps = SHARED / "mindspore-2.10-cpu" / "dumps"
    if not (dumps / "B_mod").is_dir():
        pytest.skip(f"shared fixtures absent ({dumps} not found; DUMPTUI_FIXTURES=DIR names them)")
    capsys.readouterr()
    cli.main(["compare", str(dumps / "A"), str(dumps / "B_mod"), "--json", "-"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["roots"]
    for root in doc["roots"]:
        op = next(o for o in doc["ops"] if o["position"] == root["position"])
        assert op["hints"] == root["hints"], (op["hints"], root["hints"])


def test_the_fp16_saturation_hint_only_where_the_target_computes_in_fp16():
    from dumptui.core.compare.hints import hints_for

    def said(*args, **kw) -> bool:
        return any("saturates" in say(h.reason) for h in hints_for(*args, **kw))

    assert not said("Exp", "Exp", ["float32"], ["float32"])  # an fp32 Exp after the real bug: no saturation
    assert said("Sigmoid", "Sigmoid", ["float32"], ["float16"])
    assert said("Exp", "Exp", ["float32"], ["float32"], neighbour_types_target={"Cast"})
