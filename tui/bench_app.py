"""The app `moot bench` opens in a terminal: the benchmark dashboard, with any question's debate
a keypress away (the usual debate screen, watching that debate's log).

The benchmark runs in the app's own event loop (a worker), so the local executor's debates and
the dashboard share one loop; quitting cancels it, and every debate it interrupted is resumed by
running the same command again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from textual import events, on

from ..core.bench.executors import Executor
from ..core.bench.progress import BenchProgress
from ..core.bench.runner import Job
from ..core.errors import ExitCode
from ..core.safety.sanitize import one_line_safe
from ..core.storage.state_dir import StateDir
from .app import MootApp, _run
from .screens.bench import BenchScreen


class BenchApp(MootApp):
    """The dashboard first; debates open above it (escape goes back)."""

    def __init__(self, progress: BenchProgress, executor: Executor, jobs: Sequence[Job], *, state_dir: StateDir,
                 demo: bool, theme: str | None = None, cursor_blink: bool = True) -> None:
        super().__init__(None, state_dir=state_dir, theme=theme, cursor_blink=cursor_blink)
        self.progress = progress
        self.executor = executor
        self.jobs = list(jobs)
        self.demo = demo
        self.bench_done = False
        self.bench_error: BaseException | None = None
        self._bench_task: asyncio.Task[None] | None = None

    def on_mount(self, event: events.Mount | None = None) -> None:
        if event is not None:
            event.prevent_default()  # not the base app's screens: the dashboard
        self._apply_markdown_theme()
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.dashboard = BenchScreen(self.progress, executor=self.executor.name, demo=self.demo)
        self.push_screen(self.dashboard)
        self._moot_mounted = True
        self._bench_task = asyncio.get_running_loop().create_task(self._run_bench(), name="moot-bench")

    async def _run_bench(self) -> None:
        try:
            await self.executor.run(self.jobs, self.progress.start, self.progress.done)
            self.bench_done = True
            self.dashboard.mark_finished()
            self.notify("benchmark finished: q shows the table", timeout=10)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - shown, and the CLI reports it after the app
            self.bench_error = exc
            self.notify(f"benchmark stopped: {one_line_safe(str(exc), 300)}", severity="error", timeout=30,
                        markup=False)  # an error quotes paths and servers: text, not markup

    @on(BenchScreen.Open)
    def _open_question(self, message: BenchScreen.Open) -> None:
        assert self.state_dir is not None
        self.open_debate(self.state_dir.open(message.debate_id))

    async def _stop_bench(self) -> None:
        task = self._bench_task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})

    async def action_quit(self) -> None:
        await self._stop_bench()
        await super().action_quit()

    async def _interrupt_and_exit(self, cause: str) -> None:
        await self._stop_bench()
        await super()._interrupt_and_exit(cause)

    def exit_code(self) -> int:
        return int(ExitCode.OK) if self.bench_done else int(ExitCode.INTERRUPTED)

    async def on_unmount(self) -> None:  # the base app's handler runs after this one
        await self._stop_bench()


def run_bench_app(progress: BenchProgress, executor: Executor, jobs: Sequence[Job], *, state_dir: Path,
                  demo: bool, theme: str | None = None) -> int:
    """Run the dashboard until the user quits; 0 when the benchmark finished, else 130."""
    app = BenchApp(progress, executor, jobs, state_dir=StateDir(state_dir), demo=demo, theme=theme)
    code = _run(app)
    if app.bench_error is not None:
        raise app.bench_error
    return int(code if code is not None else app.exit_code())
