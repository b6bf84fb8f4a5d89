"""/api/job says how long the stored payload is (HSTRLEN) and when what it shows is only the preview."""

from __future__ import annotations

import pytest
from django.test import Client

from queues import EchoMQ

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_1_mib_payload_is_reported_by_its_length_and_its_preview_says_so(viewer_client: Client,
                                                                          console_mq: EchoMQ) -> None:
    big = console_mq.enqueue("mail", "x" * (1024 * 1024))
    small = console_mq.enqueue("mail", '{"to": "a@example.com"}')

    shown = viewer_client.get(f"/api/job?q=mail&id={big}").json()
    whole = viewer_client.get(f"/api/job?q=mail&id={small}").json()

    assert (shown["payload_length"], shown["payload_cut"], shown["payload_preview"]) == (1024 * 1024, True, True)
    assert len(shown["payload"]) < 64 * 1024
    assert (whole["payload_length"], whole["payload_cut"], whole["payload_preview"]) == (23, False, False)
