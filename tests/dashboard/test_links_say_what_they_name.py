"""A link names a state, an order or a sort the console may not know: it is refused in words, never quietly
read as another one."""

from __future__ import annotations

import pytest
from django.test import Client

from queues import EchoMQ
from tests.support.jobs import failed_jobs

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


def test_a_misspelt_queue_is_a_404_that_names_it_and_the_queue_it_was_likely_meant_to_be(
        operator_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("emails", "x")

    answer = operator_client.get("/queue/?q=emials")

    assert answer.status_code == 404
    html = answer.content.decode()
    assert "no queue named emials (did you mean emails?)" in html
    assert 'href="/queue/?q=emails"' in html
    assert "Retry every failed job" not in html and "Pause claims" not in html and "selection-form" not in html
    assert "ws-connect" not in html


def test_a_queue_whose_jobs_were_all_deleted_is_still_a_queue(operator_client: Client, console_mq: EchoMQ) -> None:
    job_id = console_mq.enqueue("emptied", "x")
    console_mq.delete("emptied", job_id)

    answer = operator_client.get("/queue/?q=emptied")

    assert answer.status_code == 200
    assert "Retry every failed job" in answer.content.decode()


def test_the_api_answers_a_misspelt_queue_with_a_json_404(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("emails", "x")

    for url in ("/api/queue?q=emials", "/api/queue/jobs?q=emials&state=pending"):
        answer = viewer_client.get(url)
        assert answer.status_code == 404, url
        assert answer.json() == {"error": "no queue named emials (did you mean emails?)"}, url
    assert viewer_client.get("/api/queue?q=emails").status_code == 200


def test_a_missing_jobs_page_says_so_and_offers_no_download_and_no_empty_history(viewer_client: Client,
                                                                                 console_mq: EchoMQ) -> None:
    console_mq.enqueue("emails", "x")

    answer = viewer_client.get("/job/?q=emails&id=nope")

    assert answer.status_code == 404
    html = answer.content.decode()
    assert "no job nope in emails" in html
    assert "Download" not in html and 'id="job-history"' not in html and 'id="job-payload"' not in html


def test_get_on_an_action_url_answers_405_with_a_page_a_person_can_read(operator_client: Client,
                                                                       console_mq: EchoMQ) -> None:
    answer = operator_client.get("/actions/job/")

    assert answer.status_code == 405
    assert answer["Allow"] == "POST"
    html = answer.content.decode()
    assert "GET is not answered here: it takes POST" in html
    assert "Back to the overview" in html


def test_an_unknown_action_or_outcome_on_the_audit_log_is_refused_in_words_and_stays_selected(
        viewer_client: Client) -> None:
    answer = viewer_client.get("/audit/?action=bogus&outcome=sideways")

    assert answer.status_code == 400
    html = answer.content.decode()
    assert "Unknown action &#x27;bogus&#x27;: one of retry," in html
    assert "unknown outcome &#x27;sideways&#x27;: one of " in html
    assert '<option value="bogus" selected>bogus (unknown)</option>' in html
    assert '<option value="sideways" selected>sideways (unknown)</option>' in html


def test_the_audit_log_selects_the_user_its_link_names_even_one_with_no_entries(viewer_client: Client) -> None:
    html = viewer_client.get("/audit/?user=nobody-yet").content.decode()

    assert '<option value="nobody-yet" selected>nobody-yet (no entries)</option>' in html
    assert html.count(" selected>") == 1


def test_the_failures_page_selects_the_release_and_host_its_link_names_even_outside_the_sample(
        viewer_client: Client, console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 2)

    html = viewer_client.get("/failures/?q=mail&release=v9&host=elsewhere").content.decode()

    assert '<option value="v9" selected>v9 (none in the sample)</option>' in html
    assert '<option value="elsewhere" selected>elsewhere (none in the sample)</option>' in html
    assert html.count(" selected>") == 3  # and the sort
