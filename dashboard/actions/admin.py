from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .models import ActionGrant, AuditEntry, QueueGrant


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """Read-only: the log is written by the actions themselves, never edited by hand."""

    list_display = ["created_at", "username", "action", "queue", "scope", "outcome", "result", "moved", "skipped",
                    "missing"]
    list_filter = ["action", "outcome", "scope", "queue", "username"]
    search_fields = ["queue", "username", "result"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(QueueGrant)
class QueueGrantAdmin(admin.ModelAdmin):
    list_display = ["user", "pattern"]
    search_fields = ["user__username", "pattern"]


@admin.register(ActionGrant)
class ActionGrantAdmin(admin.ModelAdmin):
    list_display = ["user", "group", "permission", "pattern"]
    list_filter = ["permission"]
    search_fields = ["user__username", "group__name", "pattern"]
