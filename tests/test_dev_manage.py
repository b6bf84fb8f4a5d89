"""``./dev manage api_token`` against the running demo, as the README writes it: the token it prints reads the
demo's API, and ``--list`` and ``--revoke`` see and delete it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from tests.support.demo import RunningDemo, demo_env, run_dev


def _get(url: str, token: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_a_token_made_with_dev_manage_reads_the_running_demo_and_is_listed_and_revoked() -> None:
    env = demo_env()
    demo = RunningDemo(env=env)
    try:
        demo.wait_until_serving()

        made = run_dev("manage", "api_token", "operator", "--scope", "act", "--name", "cli", env=env)
        token = made.stdout.strip()
        status, body = _get(f"http://127.0.0.1:{demo.port}/api/queues", token)
        listed = run_dev("manage", "api_token", "--list", env=env)
        revoked = run_dev("manage", "api_token", "--revoke", "cli", "operator", env=env)
        after, _ = _get(f"http://127.0.0.1:{demo.port}/api/queues", token)
    finally:
        demo.stop()

    assert made.returncode == 0 and token.startswith("emq_"), made.stderr
    assert status == 200 and "emails" in {q["queue"] for q in json.loads(body)["queues"]}
    assert "operator\tcli\tact\tcreated " in listed.stdout
    assert revoked.stdout.strip() == "revoked 1 token named 'cli'"
    assert after == 401
