"""`moot serve`: the TUI in a browser, through textual-serve (the optional extra `moot[serve]`).

textual-serve answers a page that opens a websocket, and starts one process of the served
command per connection, its screen drawn by xterm.js in the page. Whoever reaches the server
runs that command — a debate on the user's provider keys — so moot puts every route behind a
random token in the path (`http://127.0.0.1:8000/<token>/`): a request without it is refused
(403), the page's own links carry it, and a websocket opened from another site's page (an
`Origin` that is not the server's) is refused too. The server listens on 127.0.0.1 unless told
otherwise, and says so loudly when it is told otherwise.

The subclass overrides `Server._make_app`, textual-serve's one place that builds routes: its
routes are the same, moved under the token, with a middleware in front.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import os
import secrets
import signal
import sys
import time
from typing import Any

INSTALL_HINT = "moot serve needs textual-serve: pip install 'moot[serve]'"
REFUSED = "moot serve: this address needs the token printed when the server started\n"
NOT_A_WEBSOCKET = "moot serve: this address is the page's websocket; open the address the server printed\n"
DEFAULT_MAX_SESSIONS = 4
"""Each session is a whole TUI process (and its debate's calls): a few at once, not one per tab
that anyone opens."""
BUSY_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>moot: busy</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>moot serve is busy</h1>
<p>{count} sessions are open, the most this server runs at once (<code>--max-sessions {count}</code>).
Close one of them (its browser tab), then reload this page.</p>
</body></html>
"""


def new_token() -> str:
    return secrets.token_urlsafe(18)


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and localhost: reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _reap_sessions(grace_s: float = 10.0) -> None:
    """Wait for the served TUIs to exit. textual-serve asks each to quit and stops reading it,
    but does not wait for the process: on a busy machine one was still running after the
    server had returned. Whatever is left after `grace_s` is killed."""
    if not hasattr(os, "WNOHANG"):  # pragma: no cover - Windows: the sessions end with their pipes
        return
    deadline = time.monotonic() + grace_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no child left
        if pid:
            continue
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    for child in _children():
        try:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _children() -> list[int]:
    """This process's direct children (Linux's /proc; elsewhere none are found)."""
    pids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{os.getpid()}/task"):
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
    except OSError:
        return pids
    return pids


def serve(command: str, *, host: str, port: int, token: str, public_url: str | None = None,
          max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
    """Serve `command` (a shell command line that starts the TUI) until Ctrl-C or SIGTERM."""
    try:
        import aiohttp_jinja2
        import jinja2
        from aiohttp import web
        from textual_serve.server import Server
    except ImportError:
        from ..core.errors import ConfigError

        raise ConfigError(INSTALL_HINT) from None

    class TokenServer(Server):
        """textual-serve's server with every route under `/<token>/`."""

        def serve(self, debug: bool = False) -> None:
            """textual-serve's own `serve`, but the address is printed once the port is bound
            (aiohttp's `print` hook), and no access log (it would print the token)."""
            self.debug = debug
            logging.basicConfig(level=logging.WARNING, format="%(message)s")
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(sig, self.request_exit)
                except NotImplementedError:  # pragma: no cover - not on this platform
                    pass
            try:
                web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                            print=lambda *_: self.announce(), access_log=None)
            finally:
                loop.close()
                _reap_sessions()

        def announce(self) -> None:
            print(f"moot serve: the TUI on {self.public_url}/{token}/", flush=True)
            print("  (the token in the address is what lets a browser in; Ctrl-C stops the server)", flush=True)
            print(f"  (at most {max_sessions} browser session{'s' if max_sessions != 1 else ''} at once: "
                  "--max-sessions)", flush=True)

        async def _make_app(self) -> web.Application:
            app = web.Application(middlewares=[self.guard])
            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
            base = f"/{token}"
            app.add_routes([
                web.get(f"{base}/", self.handle_index, name="index"),
                web.get(f"{base}/ws", self.handle_websocket, name="websocket"),
                web.get(f"{base}/download/{{key}}", self.handle_download, name="download"),
                web.static(f"{base}/static", self.statics_path, name="static"),
            ])
            app.on_startup.append(self.on_startup)
            app.on_shutdown.append(self.on_shutdown)
            return app

        @web.middleware
        async def guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
            given = (request.path.split("/", 2) + ["", ""])[1]  # "/<token>/…"
            if not hmac.compare_digest(given.encode(), token.encode()):
                return web.Response(status=403, text=REFUSED)
            origin = request.headers.get("Origin")
            if request.path.endswith("/ws") and origin is not None and origin.rstrip("/") != self.public_url:
                return web.Response(status=403, text="moot serve: a page of another site may not connect\n")
            response: web.StreamResponse = await handler(request)
            return response

        sessions = 0
        """Websockets open now: each runs one TUI process."""

        def busy(self) -> web.Response:
            return web.Response(status=503, text=BUSY_PAGE.format(count=max_sessions), content_type="text/html",
                                headers={"Retry-After": "30"})

        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            if self.sessions >= max_sessions:
                return self.busy()
            response: web.StreamResponse = await super().handle_index(request)
            return response

        async def handle_websocket(  # type: ignore[override]  # a refusal is a plain response, no websocket
                self, request: web.Request) -> web.StreamResponse:
            # A plain GET (no upgrade) made textual-serve log a traceback: answered here instead.
            if not web.WebSocketResponse().can_prepare(request).ok:
                return web.Response(status=400, text=NOT_A_WEBSOCKET)
            # A tab that opened while the others were few may still find the server full.
            if self.sessions >= max_sessions:
                return self.busy()
            self.sessions += 1
            try:
                response: web.StreamResponse = await super().handle_websocket(request)
                return response
            finally:
                self.sessions -= 1

        async def on_startup(self, app: web.Application) -> None:
            pass  # textual-serve prints a banner here; `announce` says where to go once the port is bound

    url = public_url.rstrip("/") if public_url else None
    server = TokenServer(command, host=host, port=port, title="moot", public_url=url)
    if not is_loopback(host):
        print(f"moot serve: WARNING: listening on {host}, not on this machine only: anyone who can reach it and "
              "learns the address (with its token) runs debates with your API keys. Prefer the default "
              "127.0.0.1 and an SSH tunnel (ssh -L).", file=sys.stderr, flush=True)
    try:
        server.serve()
    except OSError as exc:
        from ..core.errors import InputError

        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
