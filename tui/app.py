"""The moot Textual app: theme registration, screens, quitting; and the CLI's entry points.

`create_app` is the one factory the CLI and the tests use. `core.cli` calls
`run_app` (run/resume), `run_watch`, `run_replay` and `run_picker`.

Over 400 lines: the app and its four entry points share the terminal setup, signal handling
and quitting rules; apart, each entry point would repeat them.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.theme import Theme as RichTheme
from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.theme import Theme as TextualTheme

from ..core.clock import Clock
from ..core.errors import ExitCode
from ..core.storage.folder import DebateFolder
from ..core.storage.state_dir import StateDir
from .collector import QuietCollector
from .commands.palette import MootCommandProvider
from .runtime.base import Runtime
from .runtime.live import LiveRuntime, SessionBuilder
from .runtime.replay import ReplayRuntime
from .runtime.watch import WatchRuntime
from .screens.debates import DebatesScreen, ShowSessions
from .settings import SettingsStore
from .theming import BUNDLED, DEFAULT_THEME, VARIABLE_DEFAULTS, load_themes

if TYPE_CHECKING:
    from ..core.models.state import Clarification
    from ..core.session import DebateSession


class MootApp(App[int]):
    """Shows one debate (live, watched or replayed) or the list of saved debates."""

    TITLE = "moot"
    COMMANDS = App.COMMANDS | {MootCommandProvider}
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        # Ctrl-C stops at once, as it does headless (the debate is saved and resumable):
        # no "press q to quit" hint, no question.
        Binding("ctrl+c", "interrupt", "Stop and quit", show=False, priority=True),
        # A priority binding runs as the app reads the key, so the command line has focus
        # before the next key is routed: typing `/summarize` fast (or pasting it) works.
        Binding("slash", "command_line", "Command", key_display="/", priority=True),
    ]

    def __init__(
        self,
        runtime: Runtime | None = None,
        *,
        state_dir: StateDir | None = None,
        theme: str | None = None,
        settings: SettingsStore | None = None,
        clock: Clock | None = None,
        cursor_blink: bool = True,
        speed: float = 1.0,
    ) -> None:
        super().__init__()
        self.runtime = runtime
        self.state_dir = state_dir
        self.settings = settings or SettingsStore()
        self.clock = clock
        self.cursor_blink = cursor_blink
        self.speed = speed
        self.runtimes: list[Runtime] = [runtime] if runtime is not None else []
        self._moot_quitting = False
        self._interrupting: asyncio.Task[None] | None = None
        self._signal_pending: str | None = None
        """What interrupted the app before it was mounted ("" when unknown), to act on at mount."""
        self._moot_mounted = False
        self.collector = QuietCollector()
        """Fewer, shorter garbage collections while the app runs (started once it is mounted)."""
        self._requested_theme = theme
        for t in load_themes():
            self.register_theme(t)
        self.theme = self._initial_theme()
        if isinstance(runtime, LiveRuntime):
            # A debate configured to clarify asks before round 1 and awaits the answers inside
            # this app's loop; one that cannot be built closes the app (the command says why).
            runtime.use_clarifier(self.ask_clarifications)
            runtime.on_build_failed = lambda: self.exit(int(ExitCode.UNEXPECTED))

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Textual's own palette commands, without its theme picker (it lists Textual's
        twenty themes; moot's three are in the palette as `Theme: NAME`, /theme all shows more)."""
        return (c for c in super().get_system_commands(screen) if c.title != "Theme")

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    def _initial_theme(self) -> str:
        wanted = self._requested_theme or self.settings.load().theme or DEFAULT_THEME
        if wanted in self.available_themes:
            return wanted
        self._bad_theme = wanted
        return DEFAULT_THEME

    def on_mount(self) -> None:
        from .screens.debate import DebateScreen

        self._apply_markdown_theme()
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        bad = getattr(self, "_bad_theme", None)
        if bad:
            self.notify(f"unknown theme {bad!r}; using {DEFAULT_THEME} (themes: {', '.join(BUNDLED)})",
                        severity="warning", markup=False)  # a config's text, not markup
        if self.runtime is not None:
            self.push_screen(DebateScreen(self.runtime, speed=self.speed if self.runtime.mode == "replay" else None))
        else:
            self.push_screen(DebatesScreen(self.state_dir or StateDir()))
        self._moot_mounted = True
        self.call_after_refresh(self.collector.start)  # what exists now lives as long as the app
        if self._signal_pending is not None:  # SIGINT/SIGTERM came while the app was starting
            self.interrupt_now(self._signal_pending)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "command_line":
            from textual.widgets import TextArea

            from .screens.debate import DebateScreen

            # In a person's editor a slash is text (the command line is a tab or an escape away).
            return isinstance(self._command_screen(), DebateScreen) and not isinstance(self.focused, TextArea)
        return True

    def _command_screen(self) -> Screen[object] | None:
        """The screen whose command line `/` opens: the debate's, under the lists shown over it
        (the context overview, the search hits, a comparison, help) — those take no typed text,
        so a slash there means the command line, as everywhere. Screens that read text of their
        own (the messages view's find, the saved debates' filter) keep their slash."""
        from .screens.debate import DebateScreen

        stack = self.screen_stack
        i = len(stack) - 1
        # The debate on top (the footer asks at the first frame): the screens that go over it are
        # loaded when one is opened, not for that.
        if i > 0 and not isinstance(stack[i], DebateScreen):
            from .screens.compare import CompareScreen
            from .screens.context_overview import ContextOverviewScreen
            from .screens.help import HelpScreen
            from .screens.search_results import SearchResultsScreen

            over = (ContextOverviewScreen, SearchResultsScreen, CompareScreen, HelpScreen)
            while i > 0 and isinstance(stack[i], over):
                i -= 1
        return stack[i] if stack else None

    def action_command_line(self) -> None:
        from .screens.debate import DebateScreen

        debate = self._command_screen()
        if not isinstance(debate, DebateScreen):
            return
        while len(self.screen_stack) > 1 and self.screen_stack[-1] is not debate:  # back to the debate
            self.pop_screen()
        debate.action_command_line()

    # ------------------------------------------------------------------ themes

    def _apply_markdown_theme(self) -> None:
        """Rich's markdown styles (used for contributions) in the current theme's colours."""
        t = self.current_theme
        primary, accent = t.primary, t.accent or t.primary
        if getattr(self, "_markdown_theme_pushed", False):
            self.console.pop_theme()
        self.console.push_theme(RichTheme({
            "markdown.h1": f"bold {primary}", "markdown.h2": f"bold underline {primary}",
            "markdown.h3": f"bold {primary}", "markdown.h4": "bold", "markdown.h5": "italic",
            "markdown.code": f"bold {accent}", "markdown.item.bullet": f"bold {primary}",
            "markdown.item.number": f"bold {primary}", "markdown.link": f"underline {primary}",
            "markdown.block_quote": "italic", "markdown.hr": "dim",
        }))
        self._markdown_theme_pushed = True

    def _theme_changed(self, theme: TextualTheme) -> None:
        """Every switch (/theme, `t`, the palette's theme picker) restyles markdown and is remembered."""
        self._apply_markdown_theme()
        self.settings.update(theme=theme.name)

    # ------------------------------------------------------------------ clarifications

    async def ask_clarifications(self, questions: list[Clarification]) -> list[str]:
        """Show the clarification dialog and wait for it (never blocks the app's loop).

        Called from the engine's task: the dialog is pushed from the app's own message
        queue, and the answers come back through a future the dialog resolves."""
        from .screens.clarify import ClarifyScreen

        names: dict[str, str] = {}
        if isinstance(self.runtime, LiveRuntime):
            names = {a.id: a.name for a in self.runtime.orchestrator.agents}
        answered: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        screen = ClarifyScreen(questions, names, round_no=max((q.round for q in questions), default=1))

        def dismissed(answers: list[str] | None) -> None:
            if not answered.done():
                answered.set_result(list(answers or []))

        def show() -> None:
            if not answered.done():
                self.push_screen(screen, dismissed)

        self.call_later(show)
        try:
            return await answered
        finally:
            if not answered.done() or answered.cancelled():
                # given up (the debate stopped): no late push; close the dialog if it is on top
                answered.cancel()
                if screen.is_attached and self.screen_stack and self.screen_stack[-1] is screen:
                    screen.dismiss([])

    # ------------------------------------------------------------------ debates

    @on(DebatesScreen.Open)
    def _open_picked(self, message: DebatesScreen.Open) -> None:
        self.open_debate(message.folder, replay=message.replay)

    def sessions_dir(self) -> StateDir:
        """The state dir the sessions screen lists: the one given, else the shown debate's."""
        if self.state_dir is not None:
            return self.state_dir
        folder = next((f for f in (r.debate_folder() for r in self.runtimes) if f is not None), None)
        return StateDir(folder.path.parent) if folder is not None else StateDir()

    @on(ShowSessions)
    def _show_sessions(self) -> None:
        self.open_sessions()

    def open_sessions(self) -> None:
        """The sessions screen over the debate shown (`d`, `/debates`): back to the one already
        open below, else a new one; esc returns to the debate."""
        sessions = next((s for s in reversed(self.screen_stack) if isinstance(s, DebatesScreen)), None)
        if sessions is not None:
            while self.screen is not sessions:
                self.pop_screen()
            sessions.action_reload()
            return
        self.push_screen(DebatesScreen(self.sessions_dir(), can_go_back=True))

    def open_debate(self, folder: DebateFolder, replay: bool = False) -> None:
        """From the list: watch (read-only, follows the log) or replay a saved debate. The debate
        this process runs is not watched beside itself: its own screen comes back."""
        from .screens.debate import DebateScreen

        if not replay:
            for screen in reversed(self.screen_stack):
                shown = screen.runtime.debate_folder() if isinstance(screen, DebateScreen) else None
                if shown is not None and shown.path.resolve() == folder.path.resolve():
                    while self.screen is not screen:
                        self.pop_screen()
                    return
        runtime: Runtime = (ReplayRuntime(folder, self.speed, clock=self.clock) if replay
                            else WatchRuntime(folder, clock=self.clock))
        self.runtimes.append(runtime)
        self.push_screen(DebateScreen(runtime, can_go_back=True, speed=self.speed if replay else None))

    def open_live(self, session: DebateSession) -> None:
        """Run another debate in this process (a fork, `/fork`) in its own screen, beside the one
        already running: both go on; esc comes back, and quitting stops both (saved, resumable)."""
        from .screens.debate import DebateScreen

        runtime = LiveRuntime(session, clock=self.clock)
        self.runtimes.append(runtime)
        self.push_screen(DebateScreen(runtime, can_go_back=True))

    @property
    def debate_running(self) -> bool:
        return any(r.running for r in self.runtimes)

    async def action_quit(self) -> None:
        """Quit; while a debate runs here, ask once, then stop it cleanly (saved, resumable)."""
        from .screens.confirm import ConfirmScreen

        if self._moot_quitting:
            return
        if not self.debate_running:
            await self._stop_and_exit()
            return
        if isinstance(self.screen, ConfirmScreen):
            return

        async def answered(yes: bool | None) -> None:
            if yes:
                await self._stop_and_exit()

        debate_id = self.runtime.session.folder.id if isinstance(self.runtime, LiveRuntime) else ""
        self.push_screen(ConfirmScreen(
            "Stop the debate and quit?",
            f"It is saved and can be continued with `moot resume {debate_id}`." if debate_id else
            "It is saved and can be continued with `moot resume`.",
            yes="Stop and quit", no="Keep running"), answered)

    def action_interrupt(self) -> None:
        """Ctrl-C: stop the debate at once (interrupted, saved, resumable) and quit; no question."""
        self.interrupt_now("ctrl+c")

    def interrupt_now(self, cause: str = "") -> None:
        """SIGINT / SIGTERM (or Ctrl-C): cancel whatever runs at once and exit; idempotent.
        `cause` (a signal's name) is recorded as what interrupted the debate.

        Runs in its own task, not in the app's message queue, so a busy screen or an
        open dialog cannot delay it."""
        if not self._moot_mounted:
            self._signal_pending = cause
            return
        if self._interrupting is None:
            self._interrupting = asyncio.get_running_loop().create_task(self._interrupt_and_exit(cause),
                                                                        name="moot-interrupt")

    async def _interrupt_and_exit(self, cause: str) -> None:
        self._moot_quitting = True
        try:
            for runtime in self.runtimes:
                await runtime.interrupt(cause)
        finally:
            self.exit(self.exit_code())

    async def _stop_and_exit(self) -> None:
        self._moot_quitting = True
        if self.debate_running:
            self.notify("stopping the debate…", timeout=10)
        await self.shutdown_runtimes()
        self.exit(self.exit_code())

    async def shutdown_runtimes(self) -> None:
        for runtime in self.runtimes:
            await runtime.shutdown()

    def exit_code(self) -> int:
        runtime = self.runtime
        if isinstance(runtime, LiveRuntime):
            if runtime.built is None:  # quit before the debate was built
                return int(ExitCode.INTERRUPTED)
            if runtime.error:
                return int(ExitCode.UNEXPECTED)
            return runtime.session.state.exit_code
        if isinstance(runtime, WatchRuntime) and runtime.gone is not None:
            return int(ExitCode.INTERRUPTED)
        return int(ExitCode.OK)

    async def on_unmount(self) -> None:
        # However the app ends (an exception, a test harness), never leave the engine running.
        self.collector.stop()
        await self.shutdown_runtimes()


def create_app(
    runtime: Runtime | None = None,
    *,
    state_dir: StateDir | Path | str | None = None,
    theme: str | None = None,
    settings: SettingsStore | None = None,
    clock: Clock | None = None,
    cursor_blink: bool = True,
    speed: float = 1.0,
) -> MootApp:
    """The app factory used by the CLI entry points below and by the tests."""
    sd = state_dir if isinstance(state_dir, StateDir) or state_dir is None else StateDir(state_dir)
    return MootApp(runtime, state_dir=sd, theme=theme, settings=settings, clock=clock,
                   cursor_blink=cursor_blink, speed=speed)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _run(app: MootApp) -> int | None:
    """Run the app; SIGINT and SIGTERM belong to it meanwhile.

    They are handled on the app's own event loop (`MootApp.interrupt_now`: a running
    debate is cancelled, recorded as interrupted, the app exits and the terminal is
    restored). Before the loop's handlers are in place and after they are gone, a
    signal is only noted, so the CLI's own handler (KeyboardInterrupt) never fires
    inside the app; the previous handlers come back when it returns."""
    pending: list[int] = []

    def note(signum: int, frame: object) -> None:
        pending.append(signum)

    previous: dict[signal.Signals, signal._HANDLER] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, note)

    async def main() -> int | None:
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        for sig in previous:
            try:
                loop.add_signal_handler(sig, app.interrupt_now, sig.name)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - not on this platform
                pass
        if pending:
            app.interrupt_now(signal.Signals(pending[0]).name)
        try:
            return await app.run_async()
        finally:
            try:
                await app.shutdown_runtimes()
            finally:
                for sig in installed:
                    loop.remove_signal_handler(sig)
                    signal.signal(sig, note)

    try:
        return asyncio.run(main())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_app(session: DebateSession, theme: str | None = None) -> int:
    """`moot resume` (and a fork) in a terminal: the live debate; returns the exit code."""
    runtime = LiveRuntime(session)
    app = create_app(runtime, theme=theme)
    result = _run(app)
    code = result if isinstance(result, int) else app.exit_code()
    _say_end(session)
    return code


def _say_end(session: DebateSession) -> None:
    """How the debate ended (or where it is saved), on stderr once the app has closed."""
    from ..core.observe.headless import ending_line

    state = session.state
    line = ending_line(state, session.folder.path) if state.problem else None
    if line is not None:
        print(line, file=sys.stderr)
    elif state.status in ("completed", "stopped_budget"):
        print(f"saved in {session.folder.path}", file=sys.stderr)


def run_app_building(build: SessionBuilder, *, title: str, theme: str | None = None,
                     on_close: Callable[[], None] = lambda: None) -> tuple[int, DebateSession | None]:
    """`moot run` in a terminal: the app's first screen at once, the session built behind it
    (`build` in a thread); then `on_close` and the ending line. The exit code and the session;
    the build's own exception, once the app has closed, when it failed."""
    runtime = LiveRuntime(build=build, title=title)
    app = create_app(runtime, theme=theme)
    try:
        result = _run(app)
    finally:
        asyncio.run(runtime.finish_building())
    if runtime.build_error is not None:
        raise runtime.build_error
    session = runtime.built
    code = result if isinstance(result, int) else app.exit_code()
    if session is None:  # quit before it was built: nothing was made
        return code, None
    on_close()
    _say_end(session)
    return code, session


def run_watch(folder: DebateFolder, theme: str | None = None) -> int:
    """`moot watch ID`: follow a debate's event log (read-only); 130 when its writer was found
    gone without an end (the line saying so is printed again on the way out)."""
    runtime = WatchRuntime(folder)
    _run(create_app(runtime, theme=theme))
    if runtime.gone is not None:
        print(f"moot: {runtime.gone}", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    return 0


def run_replay(folder: DebateFolder, speed: float = 1.0, theme: str | None = None) -> int:
    """`moot replay ID --speed X`: play a recorded debate with its original timing / speed."""
    _run(create_app(ReplayRuntime(folder, speed), theme=theme, speed=speed))
    return 0


def run_picker(state_dir: StateDir | Path | str | None, theme: str | None = None) -> int:
    """`moot watch` without an ID: pick a saved debate to watch or replay."""
    _run(create_app(None, state_dir=state_dir, theme=theme))
    return 0
