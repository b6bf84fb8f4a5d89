"""The live side of a bulk run: its progress pushed to the page, and its cancel button.

Progress is read from the run's audit row, so a page connected to any console
process follows a run started by any other. The socket is only as strong as
the HTTP views: it needs a session (the Origin is checked by the ASGI stack),
and a cancel is refused to anyone who may not act on the run's queue.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.core.exceptions import PermissionDenied
from django.template.loader import render_to_string

from dashboard.consumers import BAD_REQUEST, accept_signed_in
from queues import InvalidInput

from . import access, services
from .models import AuditEntry

PUSH_EVERY_S: Final = 0.25


class RunConsumer(AsyncWebsocketConsumer):
    entry_id: int
    pusher: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        query = await accept_signed_in(self)
        if query is None:
            return
        text = query.get("id", "")
        if not text.isdigit() or not await database_sync_to_async(AuditEntry.objects.filter(pk=int(text)).exists)():
            await self.close(code=BAD_REQUEST)
            return
        self.entry_id = int(text)
        self.pusher = asyncio.create_task(self._push())

    async def disconnect(self, code: int) -> None:
        if self.pusher is not None:
            self.pusher.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            message: Any = json.loads(text_data or "")
        except ValueError:
            message = None
        if not isinstance(message, dict) or message.get("action") != "cancel":
            await self._note("not understood: this socket only takes a cancel")
            return
        try:
            await database_sync_to_async(services.run_cancel)(user=self.scope["user"], entry_id=self.entry_id)
        except PermissionDenied as denied:
            await self._note(f"refused: {denied}")
        except InvalidInput as error:
            await self._note(f"not done: {error}")

    async def _note(self, text: str) -> None:
        await self.send(text_data=render_to_string("dashboard/actions/run_note.html",
                                                   {"entry_id": self.entry_id, "text": text}))

    def _render(self) -> tuple[str, bool]:
        entry = AuditEntry.objects.get(pk=self.entry_id)
        html = render_to_string("dashboard/actions/run_progress.html", {
            "entry": entry, "oob": True, "can_cancel": access.may_act(self.scope["user"], entry.queue)})
        return html, entry.is_running

    async def _push(self) -> None:
        last = ""
        running = True
        while running:
            html, running = await database_sync_to_async(self._render)()
            if html != last:
                await self.send(text_data=html)
                last = html
            if running:
                await asyncio.sleep(PUSH_EVERY_S)
        await self.close(code=1000)
