"""WhiteNoise as the console runs it, with its look through the static folders made once per test process."""

from __future__ import annotations

from typing import Any, ClassVar

from whitenoise.middleware import WhiteNoiseMiddleware  # type: ignore[import-untyped]


class WhiteNoiseScannedOnce(WhiteNoiseMiddleware):
    """Every Django test client loads its middleware afresh, and WhiteNoise's look through the static folders
    (every file's stat and headers, about 30 ms) ran some thousands of times a run. The files do not change
    during a run, so the first look serves the rest; what a request is answered is the same."""

    _found: ClassVar[dict[tuple[Any, ...], dict[str, Any]]] = {}

    def add_files_from_finders(self) -> None:
        key = (self.static_prefix, self.max_age, self.charset, self.allow_all_origins, self.index_file)
        found = self._found.get(key)
        if found is None:
            before = dict(self.files)
            super().add_files_from_finders()
            found = self._found[key] = {url: file for url, file in self.files.items() if before.get(url) is not file}
        self.files.update(found)
