"""The live side of a bulk run: its progress pushed to the page, and its cancel button.

Progress is read from the run's audit row, so a page connected to any console
process follows a run started by any other. The socket is only as strong as
the HTTP views: it needs a session (the Origin is checked by the ASGI stack),
the user is read afresh for every cancel and every RECHECK_USER_S (a logout
or deactivation closes the socket, a lost role hides the button), and a
cancel is refused, and audited, to anyone who may not act on the run's queue.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

from channels.db import database_sync_to_async
from django.core.exceptions import PermissionDenied
from django.template.loader import render_to_string

from dashboard.consumers import (
    BAD_REQUEST,
    ClosedTabTolerant,
    accept_signed_in,
    current_user,
    refusal_code,
    watch_user,
)
from dashboard.permissions import Performs
from queues import InvalidInput

from . import access, services
from .bulk import RUN_ACTIONS
from .models import AuditEntry

PUSH_EVERY_S: Final = 0.25
# A run without progress for a minute most likely lost its process: looked at this rarely until the sweep marks it.
STALLED_PUSH_EVERY_S: Final = 5.0


class RunConsumer(ClosedTabTolerant):
    entry_id: int
    pusher: asyncio.Task[None] | None = None
    watcher: asyncio.Task[None] | None = None
    # What a client may send on this socket: {"action": "cancel"}.
    MESSAGE_TYPES: Final[tuple[str, ...]] = ("cancel",)
    # Cancelling a run needs the permission of the run's own action.
    PERFORMS: Final[dict[str, Performs]] = {"cancel": Performs(RUN_ACTIONS, field="run")}

    async def connect(self) -> None:
        query = await accept_signed_in(self)
        if query is None:
            return
        text = query.get("id", "")
        known = text.isascii() and text.isdigit()  # str.isdigit() alone takes '²', which int() refuses
        if not known or not await database_sync_to_async(AuditEntry.objects.filter(pk=int(text)).exists)():
            await self.close(code=BAD_REQUEST)
            return
        self.entry_id = int(text)
        self.pusher = asyncio.create_task(self._push())
        self.watcher = watch_user(self)

    async def disconnect(self, code: int) -> None:
        if self.watcher is not None:
            self.watcher.cancel()
        if self.pusher is not None:
            self.pusher.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            message: Any = json.loads(text_data or "")
        except ValueError:
            message = None
        if not isinstance(message, dict) or message.get("action") not in self.MESSAGE_TYPES:
            await self._note("not understood: this socket only takes a cancel")
            return
        user = await current_user(self)
        code = await refusal_code(user)
        if code is not None:
            await self.close(code=code)
            return
        try:
            await database_sync_to_async(services.run_cancel)(user=user, entry_id=self.entry_id)
        except PermissionDenied as denied:
            await database_sync_to_async(services.record_forbidden)(user=user, data={}, reason=str(denied),
                                                                    run_id=self.entry_id)
            await self._note(f"refused: {denied}")
        except InvalidInput as error:
            await self._note(f"not done: {error}")

    async def _note(self, text: str) -> None:
        await self.send(text_data=render_to_string("dashboard/actions/run_note.html",
                                                   {"entry_id": self.entry_id, "text": text}))

    def _render(self) -> tuple[str, bool, bool]:
        entry = AuditEntry.objects.get(pk=self.entry_id)
        can_cancel = access.entry_refusal(self.scope["user"], entry.action, entry.queues) is None
        html = render_to_string("dashboard/actions/run_progress.html", {"entry": entry, "oob": True, "can_cancel": can_cancel})
        return html, entry.is_running, entry.is_stalled

    async def _push(self) -> None:
        """Follows the run until it ends (or the sweep marks it abandoned), then closes: a run that ended polls
        nothing."""
        last = ""
        running = True
        while running:
            html, running, stalled = await database_sync_to_async(self._render)()
            if html != last:
                await self.send(text_data=html)
                last = html
            if running:
                await asyncio.sleep(STALLED_PUSH_EVERY_S if stalled else PUSH_EVERY_S)
        await self.close(code=1000)
