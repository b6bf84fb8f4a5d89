"""The pages of payload edits that read: a kept version as a download, and a queue's JSON Schema."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from queues import InvalidInput, Refused, Unavailable, validate_job_id, validate_queue_name
from queues.payload_versions import VERSION_READ_MAX, schema, versions
from queues.redaction import DEFAULT_NAMES, config as redaction_config

from .redaction import read_masker, reader_for
from .services import read
from .viewing import viewers_only


@require_GET
@viewers_only
def job_version(request: HttpRequest) -> HttpResponse:
    """One kept version of a job's payload, as stored, as a download (never rendered by the browser)."""
    try:
        name = validate_queue_name(request.GET.get("q", ""))
        job_id = validate_job_id(request.GET.get("id", ""))
        seq = request.GET.get("v", "")
        if not (seq.isascii() and seq.isdigit() and 0 < len(seq) < 15):
            raise InvalidInput(f"a version is a whole number, not {seq!r}")
        kept = read(lambda mq: mq.run(versions(name, job_id, version=int(seq), max_bytes=VERSION_READ_MAX)))
        masker = read_masker(reader_for(request.user), name)
    except (InvalidInput, Refused) as error:
        return render(request, "dashboard/bad_input.html", {"message": str(error), "now_ms": 0}, status=400)
    except Unavailable as error:
        return render(request, "dashboard/bad_input.html", {"message": "", "now_ms": 0, "redis_down": True,
                                                            "redis_error": str(error)}, status=503)
    if kept.version is None or kept.cut:
        return render(request, "dashboard/bad_input.html", {
            "message": f"job {job_id} of {name} keeps no version {seq}", "now_ms": kept.now_ms}, status=404)
    response = HttpResponse(kept.version if masker is None else masker.payload(kept.version),
                            content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{job_id.encode().hex()[:64]}.v{seq}.payload"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
@viewers_only
def schema_page(request: HttpRequest) -> HttpResponse:
    """A queue's JSON Schema for edits and its masked payload paths, and (operators) the forms that set them."""
    context: dict[str, Any] = {"queue": request.GET.get("q", ""), "now_ms": 0,
                               "default_names": ", ".join(sorted(DEFAULT_NAMES))}
    try:
        name = validate_queue_name(context["queue"])
        found = read(lambda mq: mq.run_many([schema(name), redaction_config(name)]))
        for part in found:
            if isinstance(part, Exception):
                raise part
        context["schema"], context["redaction"] = found
    except InvalidInput as error:
        return render(request, "dashboard/bad_input.html", {**context, "message": str(error)}, status=400)
    except Unavailable as error:
        return render(request, "dashboard/schema.html", {**context, "redis_down": True, "redis_error": str(error)},
                      status=503)
    return render(request, "dashboard/schema.html", context)
