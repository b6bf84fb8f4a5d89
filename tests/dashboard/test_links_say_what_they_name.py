"""A link names a state, an order or a sort the console may not know: it is refused in words, never quietly
read as another one."""

from __future__ import annotations

import pytest
from django.test import Client

from queues import EchoMQ

pytestmark = pytest.mark.django_db


def test_an_unknown_state_on_a_queue_page_is_refused_in_words(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")

    answer = viewer_client.get("/queue/?q=mail&state=bogus")

    assert answer.status_code == 400
    assert "unknown state &#x27;bogus&#x27;" in answer.content.decode()


def test_an_unknown_order_on_a_queue_page_is_refused_in_words(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")

    answer = viewer_client.get("/queue/?q=mail&state=done&order=sideways")

    assert answer.status_code == 400
    assert "unknown order &#x27;sideways&#x27;" in answer.content.decode()


def test_an_unknown_state_on_the_search_page_is_refused_even_before_any_filter(viewer_client: Client,
                                                                              console_mq: EchoMQ) -> None:
    answer = viewer_client.get("/search/?q=orders&state=bogus")

    assert answer.status_code == 400
    html = answer.content.decode()
    assert "unknown state &#x27;bogus&#x27;" in html
    assert '<option value="bogus" selected>bogus (unknown)</option>' in html


def test_the_search_page_selects_the_state_its_link_names(viewer_client: Client, console_mq: EchoMQ) -> None:
    html = viewer_client.get("/search/?q=orders&state=done").content.decode()

    assert '<option value="done" selected>done</option>' in html
    assert html.count(" selected>") == 1


def test_an_unknown_sort_on_the_overview_is_refused_in_words(viewer_client: Client, console_mq: EchoMQ) -> None:
    answer = viewer_client.get("/?sort=colour")

    assert answer.status_code == 400
    assert "unknown sort &#x27;colour&#x27;" in answer.content.decode()
