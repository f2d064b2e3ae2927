"""The main screen's exports: the session (`S`), a re-dump config for the interval (`e`), the remedy of the
culprits (`R`: precision or the op, and the files that keep an op in float32) and the comparison as CSV (`x`). In a terminal each is written to a path the user confirms (never inside a dump); in a browser
(`dumptui serve`) each reaches the user as a download (`deliver_text`), never only the server's disk.

`Exports` is owned by the main screen (its four actions call it); what it needs of the screen is `ExportHost`."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from textual.app import App
from textual.worker import Worker, get_current_worker

from dumptui.present.controller import PairController
from dumptui.present.driver import BisectState, RedumpPlan
from dumptui.present.paths import (
    default_export_path,
    default_redump_dir,
    default_session_path,
    refuse_dump_dir,
    refuse_output,
)
from dumptui.report.csvprofiles import DEFAULT_PROFILE, PROFILE_WORDS
from dumptui.tui.screens.paths import CsvExportScreen, ExportScreen, SaveScreen


def refuse_file_name(name: str) -> str | None:
    """A download's name: a plain file name (the browser decides the folder)."""
    if not name.strip():
        return "give a file name"
    if "/" in name or "\\" in name or name.strip() in (".", ".."):
        return f"{name}: a file name only (the browser saves it in its downloads folder)"
    return None


class ExportHost(Protocol):
    """What the exports use of the screen that owns them."""

    @property
    def app(self) -> App[Any]: ...

    def notify(self, message: str, *, severity: Any = ..., timeout: float | None = ..., markup: bool = ...) -> None: ...

    def run_worker(
        self, work: Any, *, group: str, exclusive: bool, thread: bool, exit_on_error: bool
    ) -> Worker[Any]: ...

    def show_failure(self, work: str, error: BaseException, path: str = "") -> None:
        """What failed, with the path and the reason, in the screen's one place for failures."""

    def retry_work(self, work: str) -> None:
        """`work` starts again: its last failure is no longer the state."""


class Exports:
    def __init__(self, host: ExportHost, controller: PairController):
        self.host = host
        self.controller = controller
        self.saved_path: str | None = None  # what was written last of each kind (for tests and the notes)
        self.exported_path: str | None = None
        self.csv_path: str | None = None
        self.remedy_path: str | None = None
        self.report_path: str | None = None
        self.delivered: list[str] = []  # file names handed to the browser, in order

    @property
    def app(self) -> App[Any]:
        return self.host.app

    @property
    def web(self) -> bool:
        return self.app.is_web

    def notify(self, message: str, **kwargs: Any) -> None:
        self.host.notify(message, **kwargs)

    def show_failure(self, work: str, error: BaseException, path: str = "") -> None:
        self.host.show_failure(work, error, path)

    def _in_thread(self, job: Callable[[], None]) -> Worker[Any]:
        """Off the UI thread, one export at a time."""
        return self.host.run_worker(job, group="export", exclusive=True, thread=True, exit_on_error=False)

    def _deliver(self, text: str, name: str, what: str) -> None:
        """A download for the browser user (`dumptui serve`)."""
        self.app.deliver_text(io.StringIO(text), save_filename=name)
        self.delivered.append(name)
        self.notify(f"{what}: downloading {name}", markup=False, timeout=8)

    # ------------------------------------------------------------------ S: the session
    def save(self) -> None:
        if self.web:
            dialog = SaveScreen(
                "dumptui-session.json",
                refuse_file_name,
                label="Download the bisection session as:",
                note="resume later with: " + self.controller.resume_command("FILE"),
            )
        else:
            default = default_session_path(self.controller.dumps())
            dialog = SaveScreen(
                default,
                lambda p: refuse_output(p, self.controller.dumps()),
                note="resume later with: " + self.controller.resume_command(default),
            )
        self.app.push_screen(dialog, self._save_to)

    def _save_to(self, path: str | None) -> None:
        if not path or self.controller.driver is None:
            return
        self.host.retry_work("save")
        data = self.controller.marks(timeout=2)
        if data is None:
            self.notify("the bisection is busy: try again", severity="warning")
            return
        payload = self.controller.session_payload(data)
        if self.web:
            self._deliver(json.dumps(payload, indent=1), path, f"session of {len(data['steps'])} steps")
            return
        path = os.path.abspath(os.path.expanduser(path))
        try:
            self.controller.write_text_file(path, json.dumps(payload, indent=1))
        except OSError as e:
            self.show_failure("save", e, path)
            return
        self.saved_path = path
        self.notify(
            f"saved {len(data['steps'])} steps to {path}; resume with: {self.controller.resume_command(path)}",
            markup=False,
            timeout=10,
        )

    # ------------------------------------------------------------------ e: the re-dump config
    def redump(self, bstate: BisectState | None) -> None:
        if self.controller.driver is None or bstate is None:
            return
        plan = self.controller.redump_plan(bstate)
        refuse: Callable[[str], str | None]
        if self.web:
            out, refuse, label = "data_dump.json", refuse_file_name, "download the MindSpore config (dump_mode 1) as:"
        else:
            out, refuse = (
                default_export_path(self.controller.dumps()),
                (lambda p: refuse_output(p, self.controller.dumps())),
            )
            label = "write the MindSpore config (data_dump.json, dump_mode 1) to:"
        dialog = ExportScreen(
            out, default_redump_dir(self.controller.dumps()), plan.summary, refuse, refuse_dump_dir, label
        )
        self.app.push_screen(dialog, partial(self._export_to, plan))

    def _export_to(self, plan: RedumpPlan, answer: tuple[str, str] | None) -> None:
        if not answer:
            return
        self.host.retry_work("export")
        out, dump_dir = answer
        try:
            config = self.controller.redump_config(plan, os.path.expanduser(dump_dir))
        except ValueError as e:
            self.show_failure("export", e, out)
            return
        if self.web:
            self._deliver(json.dumps(config, indent=4) + "\n", out, f"{len(plan.kernels)} kernels, dump_mode 1")
            return
        out = os.path.abspath(os.path.expanduser(out))
        try:
            self.controller.write_redump(out, config)
        except (OSError, ValueError) as e:
            self.show_failure("export", e, out)
            return
        self.exported_path = out
        self.notify(
            f"wrote {out}: {len(plan.kernels)} kernels, dump_mode 1, dumping into {dump_dir}", markup=False, timeout=10
        )

    # ------------------------------------------------------------------ R: the remedy of the culprits
    def remedy(self) -> None:
        if self.controller.driver is None:
            return
        if self.web:
            dialog = SaveScreen(
                "REMEDY.txt", refuse_file_name, "Download the remedy as (the files follow):", "", "remedy"
            )
        else:
            default = os.path.join(os.path.dirname(default_export_path(self.controller.dumps())), "dumptui-remedy")
            dialog = SaveScreen(
                default,
                lambda p: refuse_output(p, self.controller.dumps()),
                "Write the remedy files into the folder:",
                "keep_dtype.cfg (ATC), converter_ascend.cfg (MindSpore Lite), to_float32.py (MindSpore), REMEDY.txt",
                "remedy",
            )
        self.app.push_screen(dialog, self._remedy_to)

    def _remedy_to(self, path: str | None) -> None:
        if path:
            self._in_thread(lambda: self.write_remedy(path))

    def write_remedy(self, path: str) -> None:
        """Off the UI thread: each culprit's op is replayed at the device's precision (reads its tensors)."""
        if self.controller.driver is None:
            return
        found = self.controller.remedies()
        causes = ", ".join(f"{r.target_name.rsplit('/', 1)[-1]}: {r.cause}" for r in found)
        if get_current_worker().is_cancelled:
            return
        if self.web:
            for name, text in self.controller.remedy_files(found).items():
                self.app.call_from_thread(self._deliver, text, name if name != "REMEDY.txt" else path, causes)
            return
        full = os.path.abspath(os.path.expanduser(path))
        try:
            written = self.controller.write_remedy(full, found)
        except OSError as e:
            self.app.call_from_thread(self.show_failure, "remedy", e, full)
            return
        self.remedy_path = full
        self.app.call_from_thread(
            self.notify,
            f"wrote {len(written)} file{'s' if len(written) != 1 else ''} to {full} ({causes})",
            markup=False,
            timeout=10,
        )

    # ------------------------------------------------------------------ x: the comparison as CSV
    # ------------------------------------------------------------------ W: the report to share
    def report(self) -> None:
        if self.web:
            dialog = SaveScreen("dumptui-report.html", refuse_file_name, "Download the report (HTML) as:", "", "report")
        else:
            default = os.path.join(os.path.dirname(default_export_path(self.controller.dumps())), "dumptui-report.html")
            dialog = SaveScreen(
                default,
                lambda p: refuse_output(p, self.controller.dumps()),
                "Write the report (one HTML page to share) to:",
                "the answer, its proof and the error along the execution order, as `dumptui report` writes it",
                "report",
            )
        self.app.push_screen(dialog, self._report_to)

    def _report_to(self, path: str | None) -> None:
        if path:
            self._in_thread(lambda: self.write_report(path))

    def write_report(self, path: str) -> None:
        """Off the UI thread: the comparison's answer (its tensor pairs cached: statistics are done)."""
        text, _code = self.controller.report_page()
        if get_current_worker().is_cancelled:
            return
        if self.web:
            self.app.call_from_thread(self._deliver, text, path, "the report")
            return
        full = os.path.abspath(os.path.expanduser(path))
        try:
            self.controller.write_text_file(full, text)
        except OSError as e:
            self.app.call_from_thread(self.show_failure, "report", e, full)
            return
        self.report_path = full
        self.app.call_from_thread(
            self.notify, f"wrote the report ({len(text.encode()):,} bytes) to {full}", markup=False, timeout=10
        )

    def csv(self) -> None:
        dumps = self.controller.dumps()
        refuse: Callable[[str], str | None]
        if self.web:
            out, refuse, label = "dumptui-compare.csv", refuse_file_name, "Download the comparison (CSV) as:"
        else:
            out = os.path.join(os.path.dirname(default_export_path(dumps)), "dumptui-compare.csv")
            refuse, label = (lambda p: refuse_output(p, dumps)), "Write every compared tensor pair as CSV to:"
        dialog = CsvExportScreen(out, refuse, label, PROFILE_WORDS, DEFAULT_PROFILE)
        self.app.push_screen(dialog, self._csv_to)

    def _csv_to(self, answer: tuple[str, str] | None) -> None:
        if answer:
            path, profile = answer
            self._in_thread(lambda: self.write_csv(path, profile))

    def write_csv(self, path: str, profile: str = DEFAULT_PROFILE) -> None:
        """Off the UI thread: 20,000 ops' results are gathered (all cached: statistics are done) and written."""
        text, rows = self.controller.comparison_csv(profile)
        if get_current_worker().is_cancelled:
            return
        if self.web:
            self.app.call_from_thread(self._deliver, text, path, f"{rows} tensor pairs, {profile} profile")
            return
        full = os.path.abspath(os.path.expanduser(path))
        try:
            self.controller.write_text_file(full, text)
        except OSError as e:
            self.app.call_from_thread(self.show_failure, "export", e, full)
            return
        self.csv_path = full
        self.app.call_from_thread(
            self.notify, f"wrote {rows} tensor pairs ({profile} profile) to {full}", markup=False, timeout=10
        )
