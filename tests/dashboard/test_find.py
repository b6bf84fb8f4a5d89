from __future__ import annotations

from django.test import Client

from queues import EchoMQ


def test_a_job_in_one_queue_redirects_to_its_page(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")
    console_mq.enqueue("thumbs", "b", job_id="j2")

    response = viewer_client.get("/find/?id=j2")

    assert response.status_code == 302
    assert response["Location"] == "/job/?q=thumbs&id=j2"


def test_an_id_in_several_queues_lists_them(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a", job_id="same")
    console_mq.enqueue("thumbs", "b", job_id="same")

    response = viewer_client.get("/find/?id=same")

    assert response.status_code == 200
    assert response.context["found"] == ["mail", "thumbs"]


def test_an_unknown_id_says_so(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a")

    response = viewer_client.get("/find/?id=nope")

    assert response.status_code == 404
    assert b"No registered queue holds a job with id" in response.content


def test_a_bad_id_is_explained(viewer_client: Client, console_mq: EchoMQ) -> None:
    response = viewer_client.get("/find/?id=a%20b")

    assert response.status_code == 400
    assert b"not allowed" in response.content
